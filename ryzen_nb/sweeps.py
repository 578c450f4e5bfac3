"""Many quantization configurations of one model, compared on one table: ``ryzen_nb.sweep``.

>>> table = ryzen_nb.sweep("model.onnx", calibration, data=held_out, labels=labels,
...                        presets=["XINT8", "A8W8", "A16W8", "BF16"], algorithms=["none", "adaquant"],
...                        exclude=[[], ["/head/Gemm"]], targets=["PHX", "STX"])      # doctest: +SKIP
>>> table.sort_values("metric", ascending=False)                                      # doctest: +SKIP
>>> ryzen_nb.evaluation.pareto_figure(table)                                          # doctest: +SKIP

Every combination of preset x algorithm x excluded layers is quantized once and scored on the
held-out ``data`` (never the calibration samples), then compiled for every target: one row per
configuration and target, with the task metric (top-1 with ``labels``, else top-1 agreement with
FP32, or your ``metric``), fidelity to FP32 (cosine, L2), the emulated NPU latency and share
(estimates of :mod:`ryzen_nb.npu`), the model size and the time it took. ``pareto`` marks the
configurations no other one beats on metric, latency and size at once (per target).

Configurations are independent: they run on local worker processes by default (one per CPU), on a
dask.distributed cluster when ``executor`` is a ``Client`` or a scheduler address, or here with
``executor=1`` (:mod:`ryzen_nb.executor`); a progress bar counts them. A configuration that fails
gives a row with its error instead of stopping the sweep.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx

from ryzen_nb import metrics, npu
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.evaluation.pareto import pareto_front
from ryzen_nb.executor import get_executor
from ryzen_nb.graph.io import load_model
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization.config import PRESETS, get_default_config

__all__ = ["ALGORITHMS", "sweep"]

#: the algorithm names a sweep takes, each switched on as a user's config would
ALGORITHMS = ("none", "cle", "adaround", "adaquant", "bias_correction")
REFERENCE = "FP32"


@dataclass(frozen=True)
class _Config:
    preset: str
    algorithm: str
    exclude: tuple[str, ...]

    @property
    def label(self) -> str:
        extra = "" if self.algorithm == "none" else f" + {self.algorithm}"
        return f"{self.preset}{extra}" + (f" - {len(self.exclude)} excluded" if self.exclude else "")


@dataclass
class _Context:
    """What every configuration shares: sent to each worker once."""

    model: bytes
    calibration: list[dict[str, np.ndarray]]
    feeds: list[dict[str, np.ndarray]]
    reference: list[np.ndarray]
    labels: np.ndarray | None
    targets: tuple[str, ...]
    output_index: int
    iterations: int
    metric: Callable[[list[np.ndarray], np.ndarray | None], float] | None


def sweep(model: Any, calibration_data: Any, *, data: Any = None, labels: Sequence[int] | None = None,
          presets: Sequence[str] = ("XINT8", "A8W8", "A16W8", "BF16", "BFP16"),
          algorithms: Sequence[str] = ("none",), exclude: Sequence[Sequence[str]] = ((),),
          targets: Sequence[str] = ("STX",), metric: Callable[[list, Any], float] | None = None,
          output_index: int = 0, iterations: int = 50, calibration_samples: int = 32,
          executor: Any = None, progress: bool = True) -> Any:
    """Quantize ``model`` with every preset x algorithm x exclusion and score each; a pandas DataFrame.

    ``calibration_data``: what :func:`ryzen_nb.quantize` takes (the first ``calibration_samples``
    are used). ``data``: held-out feeds (a list of dicts, or an array for a one-input model; default:
    none, then fidelity is measured on the calibration samples and the table says so). ``exclude``:
    lists of node names kept in float (``[]`` for none). ``metric(outputs, labels)``: your task metric
    over the outputs of all samples. ``iterations``: AdaRound/AdaQuant steps. ``executor``: see
    :func:`ryzen_nb.executor.get_executor` (default: one local process per CPU).
    """
    import pandas as pd

    float_model = load_model(model)
    calibration = _feeds(float_model, calibration_data, calibration_samples, "calibration_data")
    held_out = data is not None
    feeds = _feeds(float_model, data, None, "data") if held_out else calibration
    if labels is not None and len(labels) != len(feeds):
        raise ConfigError(f"{len(labels)} labels for {len(feeds)} samples of data: give one label per sample.")
    for p in presets:
        if p not in PRESETS:
            raise UnknownNameError("preset", p, list(PRESETS))
    for a in algorithms:
        if a not in ALGORITHMS:
            raise UnknownNameError("algorithm", a, list(ALGORITHMS))
    for t in targets:
        npu.get_target(t)  # unknown targets fail here, with the valid names, not in every worker
    reference_session = ort_session(float_model)
    reference = [np.asarray(reference_session.run(None, f)[output_index]) for f in feeds]
    context = _Context(float_model.SerializeToString(), calibration, feeds, reference,
                       None if labels is None else np.asarray(labels), tuple(targets), output_index, iterations,
                       metric)
    configs = [None] + [_Config(p, a, tuple(e)) for p, a, e in itertools.product(presets, algorithms, exclude)]
    pool = get_executor(executor, default_workers=None if len(configs) > 2 else 1)
    rows = []
    try:
        for result in pool.imap(_score, configs, context=context, desc="sweep", progress=progress):
            rows.extend(result)
    finally:
        if pool is not executor:
            pool.close()
    table = pd.DataFrame(rows)
    table["pareto"] = pareto_front(table)
    table.attrs["metric"] = ("custom" if metric else "top1" if labels is not None else "top1 agreement with FP32")
    table.attrs["data"] = "held-out data" if held_out else "the calibration samples (no held-out data given)"
    table.attrs["executor"] = repr(pool)
    return table


def _feeds(model: onnx.ModelProto, data: Any, limit: int | None, what: str) -> list[dict[str, np.ndarray]]:
    """A list of feeds from an array (one-input models), a list of feeds or arrays, or a reader."""
    names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
    if hasattr(data, "get_next"):
        out = []
        while (feed := data.get_next()) is not None and (limit is None or len(out) < limit):
            out.append(dict(feed))
        return out
    if isinstance(data, np.ndarray):
        if len(names) != 1:
            raise ConfigError(f"{what}: an array feeds a one-input model; this one has inputs {names}: pass a list "
                              "of dicts {input name: array}.")
        data = [{names[0]: x[None] if x.ndim < len(_shape(model, names[0])) else x} for x in data]
    out = []
    for item in data:
        out.append(dict(item) if isinstance(item, dict) else {names[0]: np.asarray(item)})
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise ConfigError(f"{what} holds no samples.")
    return out


def _shape(model: onnx.ModelProto, name: str) -> list[int]:
    vi = next(i for i in model.graph.input if i.name == name)
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def _config(c: _Config, iterations: int) -> Any:
    qc = get_default_config(c.preset)
    qc.nodes_to_exclude = list(c.exclude)
    if c.algorithm == "cle":
        qc.include_cle = True
    elif c.algorithm in ("adaround", "adaquant"):
        qc.include_fast_ft = True
        qc.extra_options["FastFinetune"] = {"OptimAlgorithm": c.algorithm, "NumIterations": iterations}
    elif c.algorithm == "bias_correction":
        qc.extra_options["BiasCorrection"] = True
    return qc


def _score(ctx: _Context, c: _Config | None) -> list[dict[str, Any]]:
    """One configuration (None: the FP32 model), quantized, scored and compiled per target."""
    row: dict[str, Any] = ({"config": REFERENCE, "preset": REFERENCE, "algorithm": "none", "excluded": 0}
                           if c is None else
                           {"config": c.label, "preset": c.preset, "algorithm": c.algorithm,
                            "excluded": len(c.exclude)})
    start = time.perf_counter()
    try:
        model = onnx.ModelProto.FromString(ctx.model)
        if c is not None:
            model = quantize(model, None, _config(c, ctx.iterations), ctx.calibration, progress=False).model
        row["quantize_s"] = time.perf_counter() - start
        session = ort_session(model)
        outputs = [np.asarray(session.run(None, f)[ctx.output_index]) for f in ctx.feeds]
        row.update(_task_metrics(ctx, outputs))
        row["size_mb"] = model.ByteSize() / 1e6
    except Exception as exc:  # noqa: BLE001 - one failing configuration is a row, not the end of the sweep
        return [{**row, "target": t, "error": f"{type(exc).__name__}: {exc}"[:300]} for t in ctx.targets]
    rows = []
    broken = row.pop("nonfinite", 0)
    for t in ctx.targets:
        r = {**row, "target": t, "error": f"{broken} output value(s) NaN or Inf where FP32's are finite: "
                                          "no score" if broken else ""}
        try:
            program = npu.compile(model, t)
            r["npu_share"] = program.npu_share
            r["npu_latency_ms"] = npu.estimate_latency(program, t).total_ms
        except Exception as exc:  # noqa: BLE001 - e.g. a precision the target cannot compile
            r["error"] = f"{type(exc).__name__}: {exc}"[:300]
        rows.append(r)
    return rows


def _task_metrics(ctx: _Context, outputs: list[np.ndarray]) -> dict[str, float]:
    pairs = list(zip(ctx.reference, outputs))
    out = {"cosine": float(np.mean([metrics.cosine(a, b) for a, b in pairs])),
           "l2": float(np.mean([metrics.l2(a, b) for a, b in pairs])),
           "agreement": float(np.mean([int(np.argmax(a)) == int(np.argmax(b)) for a, b in pairs]))}
    broken = sum(metrics.nonfinite_where_finite(a, b) for a, b in pairs)
    if broken:
        # wrong numbers get no score: the arg-max of NaN is index 0, which can "agree" with FP32's,
        # and a user's metric may read them as anything; the row says why (and leaves the Pareto front)
        return {**out, "agreement": float("nan"), "metric": float("nan"), "nonfinite": broken}
    if ctx.metric is not None:
        out["metric"] = float(ctx.metric(outputs, ctx.labels))
    elif ctx.labels is not None:
        out["metric"] = float(np.mean([int(np.argmax(y)) == int(label) for y, label in zip(outputs, ctx.labels)]))
    else:
        out["metric"] = out["agreement"]
    return out
