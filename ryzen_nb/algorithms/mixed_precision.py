"""Mixed precision: which layers may take the cheaper format (Quark's AutoMixprecision).

A *unit* is a target layer (Conv, ConvTranspose, Gemm, MatMul by default) — or several that read
the same activation, since one quantizer serves them all (Quark's ``NoInputQDQShared``). Switching a
unit gives its activation inputs ``act_format`` and its weights ``weight_format``.

* **Layer-wise** (BFP/MX targets, as Quark does, or ``direct``): every unit is switched.
* **Automatic**: each unit's *sensitivity* is measured by switching it alone (L2, cosine and SQNR
  against the float model's output, top-1 through ``evaluate_function``); units are then
  switched from the least sensitive up while the target holds — average L2 at most ``l2_target``,
  or a top-1 drop at most ``top1_target`` — or until ``num_target`` are switched. The per-unit
  table is in the report, for the dashboards. Ctrl-C (KeyboardInterrupt) stops the search and
  keeps what was decided.

A unit switches the activations it reads and the one it produces. Without ``dual_quant_nodes`` a
tensor touched by any switched unit takes the new format. With it (Quark's DualQuantNodes), a
tensor on a precision boundary — producer and readers in different precisions — keeps the
producer's precision and gets a second quantizer, in the other precision, for the readers that
differ (the NPU then needs no conversion inside either layer).
"""

from __future__ import annotations

import copy
import logging
import pickle
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ryzen_nb import formats as formats_
from ryzen_nb.errors import ConfigError, closest_first
from ryzen_nb.executor import Executor, SerialExecutor, free_threads, get_executor, limit_threads
from ryzen_nb.graph.batching import SampleRunner
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.metrics import cosine, l2, sqnr
from ryzen_nb.quantization.options import MixedPrecisionOptions
from ryzen_nb.quantization.run import QuantizationRun

__all__ = ["MixedPrecisionReport", "apply_mixed_precision"]

log = logging.getLogger(__name__)

DEFAULT_DATA_SIZE = 32


@dataclass
class Unit:
    layers: list[str]  #: node names
    ops: list[str]
    inputs: list[str]  #: activation tensors the layers read
    outputs: list[str]  #: activation tensors they produce (after a fused activation)
    weights: list[str]  #: weight tensors
    biases: list[str] = field(default_factory=list)  #: bias tensors


@dataclass
class MixedPrecisionReport:
    mode: str  #: "layer-wise" or "automatic"
    table: Any = field(repr=False)  #: pandas DataFrame: unit, layers, op types, sensitivities, final format
    tensor_formats: dict[str, str] = field(default_factory=dict)
    dual: dict[str, Any] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)  #: metrics with no unit switched
    all_switched: dict[str, float] = field(default_factory=dict)  #: metrics with every unit switched
    final: dict[str, float] = field(default_factory=dict)
    interrupted: bool = False
    seconds: float = 0.0
    #: of which the per-unit sensitivity analysis (the part the executor spreads over workers)
    sensitivity_seconds: float = 0.0

    @property
    def switched(self) -> int:
        return int(self.table.switched.sum()) if len(self.table) else 0

    def __repr__(self) -> str:
        metrics = f", L2 {self.final.get('l2', float('nan')):.4g}" if self.final else ""
        return (f"<MixedPrecisionReport {self.mode}: {self.switched} of {len(self.table)} unit(s) switched{metrics}, "
                f"{self.seconds:.1f} s" + (", INTERRUPTED" if self.interrupted else "") + ">")


class _Layout:
    """The units of a model and, per activation tensor, who produces and who reads it — what an
    assignment (units switched -> tensor formats and second quantizers) is computed from."""

    def __init__(self, run: QuantizationRun, o: MixedPrecisionOptions) -> None:
        graph = run.prepared.model.graph
        plan = run.plan
        self.o = o
        self.base_format = {n: t.format for n, t in plan.tensors.items()}
        folded = set(plan.folded)
        readers: dict[str, list[int]] = {}
        for i, node in enumerate(graph.node):
            for name in node.input:
                readers.setdefault(name, []).append(i)
        is_act = lambda n: n in plan.tensors and plan.tensors[n].role == "activation"  # noqa: E731

        def output_of(node: Any) -> str | None:
            out = node.output[0]
            if out in folded and len(readers.get(out, [])) == 1:
                out = graph.node[readers[out][0]].output[0]  # Conv -> Relu: the Relu's output is quantized
            return out if is_act(out) else None

        units: dict[str, Unit] = {}
        for i in plan.nodes:
            node = graph.node[i]
            if node.op_type not in o.target_op_types:
                continue
            inputs = [n for n in node.input if is_act(n)]
            key = inputs[0] if (inputs and o.no_input_qdq_shared) else node.name
            u = units.setdefault(key, Unit([], [], [], [], []))
            u.layers.append(node.name)
            u.ops.append(node.op_type)
            u.inputs += [n for n in inputs if n not in u.inputs]
            out = output_of(node)
            if out and out not in u.outputs:
                u.outputs.append(out)
            u.weights += [n for n in node.input[1:] if n in plan.tensors and plan.tensors[n].role == "weight"]
            u.biases += [n for n in node.input[2:] if n in plan.tensors and plan.tensors[n].role == "bias"]
        self.units = list(units.values())
        #: activation tensor -> names of the nodes reading it (the quantized value)
        self.readers = {n: [graph.node[i].name for i in readers.get(n, [])] for n in plan.tensors if is_act(n)}

    def assignment(self, chosen: list[int]) -> tuple[dict[str, str], dict[str, tuple[str, tuple[str, ...]]]]:
        """Tensor formats and second quantizers (tensor -> (format, reader nodes)) when the units
        ``chosen`` are switched."""
        o = self.o
        formats: dict[str, str] = {}
        dual: dict[str, tuple[str, tuple[str, ...]]] = {}
        if o.weight_format:
            # a float or block weight format (BFP16, MX, bfloat16) takes the bias along, as those presets do;
            # an integer one leaves it to the engine (int32 with scale input x weight)
            follow = formats_.get(o.weight_format).info.family != "integer"
            for k in chosen:
                for w in self.units[k].weights + (self.units[k].biases if follow else []):
                    formats[w] = o.weight_format
        if not o.act_format:
            return formats, dual
        switched_layers = {layer for k in chosen for layer in self.units[k].layers}
        produced = {t for k in chosen for t in self.units[k].outputs}
        touched = produced | {t for k in chosen for t in self.units[k].inputs}
        for t in touched:
            if not o.dual_quant_nodes:
                formats[t] = o.act_format
                continue
            low = t in produced  # the tensor as its producer delivers it
            other = tuple(r for r in self.readers.get(t, []) if (r in switched_layers) != low)
            if low:
                formats[t] = o.act_format
            if other:
                dual[t] = (self.base_format[t] if low else o.act_format, other)
        return formats, dual


def apply_mixed_precision(run: QuantizationRun, o: MixedPrecisionOptions) -> MixedPrecisionReport:
    """Decide the switched units and replan ``run`` (a QuantizationRun) accordingly."""
    import pandas as pd

    start = time.perf_counter()
    layout = _Layout(run, o)
    units = layout.units
    if not units:
        raise ConfigError(f"AutoMixprecision found no quantized layer of TargetOpType {list(o.target_op_types)}.")
    _check_names(run, o)
    candidates = _candidates(units, o)
    forced = [i for i in o.target_indices if 0 <= i < len(units)]
    extra = {t: o.act_format for t in o.target_tensors if o.act_format}
    rows = [{"unit": k, "layers": ", ".join(u.layers), "ops": ", ".join(sorted(set(u.ops)))} for k, u in enumerate(units)]
    automatic = not o.direct and (o.l2_target is not None or o.top1_target is not None or o.num_target or o.analysis_only)
    interrupted = False
    sensitivity_seconds = 0.0
    metrics: dict[str, dict[str, float]] = {}
    if not automatic:
        if not o.direct:
            log.warning("AutoMixprecision has no L2Target, Top1AccTarget or NumTarget: every target layer is switched")
        chosen = sorted(set(candidates) | set(forced))
        mode = "layer-wise"
    else:
        mode = "analysis" if o.analysis_only else "automatic"
        # hundreds of short onnxruntime calls: on cores that other processes hold, the spinning of their
        # threads costs more than the threads gain, so they take the cores left free (all, when idle)
        with limit_threads(free_threads()):
            evaluator = _Evaluator(run, o)
            metrics["baseline"] = evaluator(extra)
            chosen = list(forced)
            try:
                # every unit switched, first: it also calibrates whatever the switched formats need, so the
                # single-unit evaluations (possibly in other processes, without the data reader) find it all
                f, d = layout.assignment(sorted(set(candidates) | set(forced)))
                metrics["all"] = evaluator({**extra, **f}, d)
                analysis_start = time.perf_counter()
                _measure_sensitivity(run, layout, [k for k in candidates if k not in forced], rows, evaluator, extra)
                sensitivity_seconds = time.perf_counter() - analysis_start
                if not o.analysis_only:
                    metrics["final"] = _greedy(run, layout, [k for k in candidates if k not in forced], rows, chosen,
                                               evaluator, extra, o)
            except KeyboardInterrupt:
                interrupted = True
                metrics.pop("all", None)
                log.warning("mixed-precision search interrupted: keeping the %d unit(s) switched so far", len(chosen))
            if not metrics.get("final"):
                f, d = layout.assignment(chosen)
                metrics["final"] = evaluator({**extra, **f}, d)
    formats, dual = layout.assignment(chosen)
    formats.update(extra)
    for k, row in enumerate(rows):
        row["switched"] = k in chosen
        row["format"] = (o.act_format or "-") + " / " + (o.weight_format or "-") if k in chosen else "unchanged"
    run.plan = run.make_plan(tensor_formats=formats, dual=dual)
    run.settings.tensor_formats = {**run.settings.tensor_formats, **formats}
    run.settings.dual_formats = dict(dual)
    report = MixedPrecisionReport(mode, pd.DataFrame(rows), formats, dual, metrics.get("baseline", {}),
                                  metrics.get("all", {}), metrics.get("final", {}), interrupted,
                                  time.perf_counter() - start, sensitivity_seconds)
    run.notes.append(f"mixed precision ({mode}): {len(chosen)} of {len(units)} layer unit(s) switched to "
                     f"{o.act_format or '-'} activations / {o.weight_format or '-'} weights")
    return report


def _check_names(run: QuantizationRun, o: MixedPrecisionOptions) -> None:
    """Tensor and layer names the options give must be in the model (Quark drops unknown ones)."""
    nodes = [n.name for n in run.prepared.model.graph.node]
    for key, names, known, what in (("TargetTensors", o.target_tensors, list(run.plan.tensors), "a quantized tensor"),
                                    ("IncludeLayers", o.include_layers, nodes, "a node of the model"),
                                    ("ExcludeLayers", o.exclude_layers, nodes, "a node of the model")):
        for name in names:
            if name not in known:
                raise ConfigError(f"AutoMixprecision {key} names {name!r}, which is not {what} "
                                  f"(closest: {', '.join(closest_first(name, known)[:3])}).")


def _candidates(units: list[Unit], o: MixedPrecisionOptions) -> list[int]:
    """Units that may switch: not excluded by index or layer name, and within IncludeLayers if given."""
    include, exclude = set(o.include_layers), set(o.exclude_layers)
    return [k for k, u in enumerate(units)
            if k not in o.exclude_indices and not exclude & set(u.layers) and (not include or include & set(u.layers))]


def _measure_sensitivity(run: QuantizationRun, layout: _Layout, candidates: list[int], rows: list[dict], evaluator: _Evaluator,
                         extra: dict[str, str]) -> None:
    """Each candidate switched alone: its metrics go into its row as ``sensitivity_<metric>``. The
    candidates are independent, so they run on the executor of the options (``Executor`` in
    AutoMixprecision: this process by default, local processes or a dask cluster)."""
    executor = get_executor(layout.o.executor)
    context: Any = (evaluator, layout, extra)
    if not isinstance(executor, SerialExecutor):
        context = _shippable(evaluator, layout, extra, executor)
        if context is None:
            executor = SerialExecutor()
            context = (evaluator, layout, extra)
    try:
        results = executor.imap(_sensitivity_of, candidates, context=context, desc="sensitivity",
                                progress=run.progress)
        for k, result in zip(candidates, results):
            rows[k].update({f"sensitivity_{m}": v for m, v in result.items()})
    finally:
        if executor is not layout.o.executor:
            executor.close()  # a client it made from an address; what the caller passed stays open


def _sensitivity_of(context: tuple, k: int) -> dict[str, float]:
    """The metrics with unit ``k`` alone switched (a module-level function: worker processes import it)."""
    evaluator, layout, extra = context
    f, d = layout.assignment([k])
    return evaluator({**extra, **f}, d)


def _shippable(evaluator: _Evaluator, layout: _Layout, extra: dict[str, str], executor: Executor) -> tuple | None:
    """The context for other processes: the run without its data reader (the samples and reference
    outputs travel with the evaluator; calibration is complete), or None when something in it cannot
    be pickled (a lambda as EvaluateFunction): the analysis then runs here, and says so."""
    # the executor itself (a dask Client holds sockets) stays here: workers never start analyses
    o = layout.o.replace(executor=None)
    light = copy.copy(evaluator)
    light.o = o
    light.codes = {}  # each worker fills its own: not worth sending
    light.run = copy.copy(evaluator.run)
    light.run.reader = None
    light.run.config = None  # the user's config: its AutoMixprecision dict holds the executor too
    light.run.settings = copy.copy(evaluator.run.settings)
    if getattr(light.run.settings, "mixed_precision", None) is not None:
        light.run.settings.mixed_precision = light.run.settings.mixed_precision.replace(executor=None)
    shipped_layout = copy.copy(layout)
    shipped_layout.o = o
    context = (light, shipped_layout, extra)
    try:
        if getattr(o.evaluate_function, "__module__", None) == "__main__" and type(executor).__name__ != "DaskExecutor":
            raise pickle.PicklingError("EvaluateFunction is defined in the __main__ script, which workers do not run")
        pickle.dumps(context)
    except Exception as exc:  # noqa: BLE001 - any pickling failure means: run here
        if type(executor).__name__ == "DaskExecutor":
            return context  # dask pickles with cloudpickle, which takes lambdas and closures
        log.warning("sensitivity analysis runs in this process: its context cannot be sent to worker processes "
                    "(%s: %s); a module-level EvaluateFunction can", type(exc).__name__, exc)
        return None
    return context


def _greedy(run: QuantizationRun, layout: _Layout, candidates: list[int], rows: list[dict], chosen: list[int],
            evaluator: _Evaluator, extra: dict[str, str], o: MixedPrecisionOptions) -> dict[str, float]:
    """Switch candidates from the least sensitive up while the targets hold (``chosen`` grows in
    place, so an interruption keeps what was decided); returns the metrics of the last accepted step."""
    from tqdm.auto import tqdm

    key = "sensitivity_top1_drop" if o.top1_target is not None else "sensitivity_l2"
    # a unit whose switch makes the outputs NaN or Inf (sensitivity NaN) ranks as the most sensitive
    ranked = sorted(candidates, key=lambda k: np.nan_to_num(rows[k].get(key, np.inf), nan=np.inf))
    last: dict[str, float] = {}
    for k in tqdm(ranked, desc="mixed precision", unit="layer", disable=not run.progress, leave=False):
        if o.num_target and len(chosen) >= o.num_target:
            break
        measured = {m[len("sensitivity_"):]: v for m, v in rows[k].items() if m.startswith("sensitivity_")}
        if not chosen and measured:  # the first step switches the unit alone: the analysis measured that
            m = measured
        else:
            f, d = layout.assignment(chosen + [k])
            m = evaluator({**extra, **f}, d)
        if not np.isfinite(m["l2"]) or (o.l2_target is not None and m["l2"] > o.l2_target) or \
                (o.top1_target is not None and not m["top1_drop"] <= o.top1_target):
            # the least sensitive unit left already breaks the target, or makes the outputs NaN or Inf
            # (an L2 of NaN compares as within any target, and a task metric may score wrong numbers)
            break
        chosen.append(k)
        last = m
    return last


class _Evaluator:
    """Quantize with an assignment and compare with the float model on the same samples."""

    def __init__(self, run: QuantizationRun, o: MixedPrecisionOptions) -> None:
        self.run, self.o = run, o
        self.samples = run.samples(o.data_size or DEFAULT_DATA_SIZE)
        session = ort_session(run.prepared.model)
        self.reference = [session.run(None, s) for s in self.samples]
        self.ref_top1 = float(o.evaluate_function(self.reference)) if o.evaluate_function else None
        #: whether the quantized models take several samples per call: every assignment quantizes the
        #: same graph, so the first evaluation finds out for all
        self.batched: bool | None = None
        #: the weights' integer codes per format and scale: most assignments change few of them
        self.codes: dict[Any, np.ndarray] = {}

    def __call__(self, formats: dict[str, str], dual: dict[str, Any] | None = None) -> dict[str, float]:
        plan = self.run.make_plan(tensor_formats=formats, dual=dual or {})
        model = self.run.emit(plan, codes_cache=self.codes)
        runner = SampleRunner(model, batched=self.batched)
        names = [o.name for o in model.graph.output]
        outputs = [[item[n] for n in names] for item in runner.run(names, self.samples)]
        self.batched = runner.batched_ok
        i = self.o.output_index
        pairs = [(r[i], q[i]) for r, q in zip(self.reference, outputs)]
        metrics = {"l2": float(np.mean([l2(a, b) for a, b in pairs])),
                   "cosine": float(np.mean([cosine(a, b) for a, b in pairs])),
                   "sqnr": float(np.mean([min(sqnr(a, b), 200.0) for a, b in pairs]))}
        if self.o.evaluate_function is not None:
            top1 = float(self.o.evaluate_function(outputs))
            metrics["top1"] = top1
            metrics["top1_drop"] = round(self.ref_top1 - top1, 4)
        return metrics
