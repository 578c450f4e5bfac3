"""``ryzen_nb.quantize``: the whole quantization pipeline in one call.

>>> import ryzen_nb
>>> summary = ryzen_nb.quantize("model.onnx", "model_xint8.onnx", "XINT8", images)   # doctest: +SKIP
>>> summary                                                                          # doctest: +SKIP
<QuantizationSummary XINT8: 57 tensors (uint8 32, int8 25), 100 samples in 3.1 s, 97.5 MB -> 24.5 MB>

The stages are those of :class:`~ryzen_nb.quantization.run.QuantizationRun`; the accuracy
algorithms the config asks for run between them in Quark's order — cross-layer equalization
before calibration; mixed precision, AdaRound/AdaQuant and bias correction after it — each
leaving its report in ``summary.reports``. This module sits above :mod:`ryzen_nb.quantization`
and :mod:`ryzen_nb.algorithms`, which never import each other the other way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ryzen_nb.algorithms.bias_correction import bias_correction
from ryzen_nb.algorithms.cle import cross_layer_equalize
from ryzen_nb.algorithms.finetune import fast_finetune
from ryzen_nb.algorithms.mixed_precision import apply_mixed_precision
from ryzen_nb.graph.io import ModelLike, check_output
from ryzen_nb.quantization.run import QuantizationRun, QuantizationSummary, run_inputs

__all__ = ["quantize"]


def quantize(
    model: ModelLike,
    output_path: str | Path | None,
    config: Any = "XINT8",
    calibration_data: Any = None,
    *,
    input_shapes: dict[str, Any] | None = None,
    limit: int | None = None,
    progress: bool = True,
    executor: Any = None,
) -> QuantizationSummary:
    """Quantize ``model`` with ``config`` (a preset name, QuantizationConfig or Config) and write it
    to ``output_path`` (atomically; ``None`` keeps it in memory: ``summary.model``).

    ``calibration_data`` is anything :func:`ryzen_nb.calibration.make_reader` accepts (array, list
    of feeds, folder, reader, iterable); integer formats need it, bf16/BFP/MX formats do not.
    ``limit`` caps the calibration samples; ``input_shapes`` fixes dynamic input dimensions
    (``{"input": [1, 3, 224, 224]}``). ``executor`` runs the mixed-precision sensitivity analysis
    (a number of local processes, a dask ``Client`` or scheduler address: :mod:`ryzen_nb.executor`;
    the config's ``AutoMixprecision`` ``Executor`` key takes numbers and addresses too). Returns a
    :class:`QuantizationSummary`.
    """
    _refuse_output_over_input(model, output_path, calibration_data)
    run = QuantizationRun.prepare(model, config, calibration_data, input_shapes=input_shapes, limit=limit,
                                  progress=progress)
    if run.settings.cle is not None:
        _equalize(run)
    run.start()
    _recover_accuracy(run, executor)
    return run.finish(output_path)


def _recover_accuracy(run: QuantizationRun, executor: Any = None) -> None:
    """The algorithms that work on a calibrated run, as its settings ask: mixed precision, then
    AdaRound/AdaQuant, then bias correction (Quark's order)."""
    s = run.settings
    if s.mixed_precision is not None:
        options = s.mixed_precision if executor is None else s.mixed_precision.replace(executor=executor)
        run.reports["mixed_precision"] = apply_mixed_precision(run, options)
    if s.finetune is not None:
        run.reports["finetune"] = fast_finetune(run, s.finetune)
    if s.bias_correction:
        run.reports["bias_correction"] = bias_correction(run)


def _equalize(run: QuantizationRun) -> None:
    """Cross-layer equalization of the prepared float model, before anything is calibrated."""
    o = run.settings.cle
    run.prepared.model, report = cross_layer_equalize(
        run.prepared.model, steps=o.steps, balance_method=o.balance_method, weight_threshold=o.weight_threshold,
        scale_append_bias=o.scale_append_bias, scale_use_threshold=o.scale_use_threshold,
        total_layer_diff_threshold=o.total_layer_diff_threshold, replace_clip6=o.replace_clip6,
        exclude=run.settings.exclude_nodes)
    run.reports["cle"] = report
    triplets = f", {len(report.triplets)} Conv-depthwise-pointwise triplet(s)" if report.triplets else ""
    run.notes.append(f"cross-layer equalization: {len(report.pairs)} layer pair(s){triplets}, {report.sweeps} sweep(s)")


def _refuse_output_over_input(model: ModelLike, output_path: str | Path | None, calibration_data: Any) -> None:
    """Before any work: an output that is, or lands in, something the run reads is an error naming
    both paths (:func:`ryzen_nb.graph.io.check_output`)."""
    if output_path is not None:
        check_output(output_path, run_inputs(model, calibration_data), "output_path")
