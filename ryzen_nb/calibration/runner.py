"""Running calibration data through a model and streaming the statistics of chosen tensors.

The model is augmented to output every tensor to observe; each sample is checked against the
model's inputs, run once, and folded into per-tensor :class:`TensorStats`. Peak memory is one
sample's activations plus the statistics (``num_bins`` counters per tensor): it does not grow with
the number of samples.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import onnx
from onnx import helper
from tqdm.auto import tqdm

from ryzen_nb.calibration.readers import CalibrationReader
from ryzen_nb.calibration.stats import DEFAULT_NUM_BINS, TensorStats
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.prepare import PreparedModel, ort_session
from ryzen_nb.graph.shapes import with_free_batch

__all__ = ["collect_statistics", "CalibrationResult"]

log = logging.getLogger(__name__)


@dataclass
class CalibrationResult:
    stats: dict[str, TensorStats]
    samples: int
    seconds: float
    #: what looked wrong with the data without stopping calibration (constant or all-zero inputs)
    warnings: list[str] = field(default_factory=list)


def _augmented(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    present = {o.name for o in m.graph.output}
    types = {vi.name: vi for vi in list(m.graph.value_info) + list(m.graph.input)}
    for name in names:
        if name in present:
            continue
        vi = types.get(name)
        if vi is not None:
            m.graph.output.append(vi)
        else:
            m.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    return m


def collect_statistics(
    prepared: PreparedModel,
    reader: CalibrationReader,
    tensors: Mapping[str, bool],
    *,
    num_bins: int = DEFAULT_NUM_BINS,
    moving_average: float | None = None,
    progress: bool = True,
    softmax: Mapping[str, tuple[int, bool]] | None = None,
) -> CalibrationResult:
    """Statistics of ``tensors`` (name -> whether a histogram is needed) over the reader's samples;
    ``softmax`` names the tensors read only by a Softmax, with its (axis, coerce): their histograms
    also weigh each value by its softmax probability (:attr:`TensorStats.relevance`)."""
    names = list(tensors)
    softmax = softmax or {}
    stats = {n: TensorStats(histogram=tensors[n], num_bins=num_bins, moving_average=moving_average,
                            softmax=softmax.get(n)) for n in names}
    reader.bind(prepared.input_names)
    augmented = _augmented(prepared.model, names) if names else None
    session = ort_session(augmented) if augmented is not None else None
    free = prepared.dynamic_batch
    # a dynamic batch is free in the samples too: batches of any size (a smaller last one) are
    # run by a copy of the model whose batch is free again
    specs = [replace(s, shape=(None, *s.shape[1:])) if s.name in free and s.shape else s for s in prepared.inputs]
    batch_of = {s.name: s.shape[0] for s in prepared.inputs if s.name in free and s.shape}
    free_session = None
    ranges: dict[str, list[float]] = {}
    start = time.perf_counter()
    try:
        total = len(reader)
    except TypeError:
        total = None
    count = 0
    bar = tqdm(total=total, desc="Calibrating", unit="sample", disable=not progress, leave=False)
    try:
        for feed in reader:
            check_feed(feed, specs, count)
            _track_ranges(feed, ranges)
            if session is not None:
                run = session
                if any(np.shape(feed[n])[0] != b for n, b in batch_of.items()):
                    if free_session is None:
                        free_session = ort_session(with_free_batch(augmented, free))
                    run = free_session
                outputs = _run(run, names, feed, count, batch_of)
                for name, value in zip(names, outputs):
                    if np.issubdtype(np.asarray(value).dtype, np.floating) and not stats[name].update(value):
                        raise CalibrationDataError(
                            f"Calibration sample {count}: the model computes NaN or Inf in tensor {name!r} (an "
                            "overflow, or a log or division of zero, in the float model). Its range cannot be "
                            "calibrated: check that the sample is preprocessed as the model expects, or keep the "
                            f"node that writes {name!r} in float (nodes_to_exclude)."
                        )
            count += 1
            bar.update(1)
    finally:
        bar.close()
    if count == 0:
        raise CalibrationDataError(
            "The calibration reader produced no samples (get_next() returned None at once). "
            "If you reuse a reader, call its rewind() first."
        )
    seconds = time.perf_counter() - start
    log.info("calibration: %d samples, %d tensors, %.2f s", count, len(names), seconds)
    warnings = [_constant_warning(name, lo, hi, count) for name, (lo, hi) in ranges.items() if lo == hi]
    for w in warnings:
        log.warning(w)
    return CalibrationResult(stats, count, seconds, warnings)


def _run(session, names: list[str], feed: Mapping[str, np.ndarray], index: int, batch_of: Mapping[str, int]) -> list:
    try:
        return session.run(names, dict(feed))
    except Exception as exc:  # onnxruntime's errors: the float model cannot run this sample
        got = {n: int(np.shape(feed[n])[0]) for n in batch_of}
        if got == dict(batch_of):
            shapes = {k: list(np.shape(v)) for k, v in feed.items()}
            raise CalibrationDataError(
                f"onnxruntime cannot run the float model on calibration sample {index} (shapes {shapes}): "
                f"{str(exc).splitlines()[0][:300]}. Does the model run on this sample before quantization?"
            ) from exc
        raise CalibrationDataError(
            f"Calibration sample {index} has batch {got}, and the model cannot run it ({str(exc).splitlines()[0][:200]}): "
            f"its graph computes shapes from the batch of the first sample {dict(batch_of)}. Give every sample that "
            "batch (for example one sample per feed)."
        ) from exc


def _track_ranges(feed: Mapping[str, np.ndarray], ranges: dict[str, list[float]]) -> None:
    """Running min and max of each float input over the samples (for the constant-data warning)."""
    for name, value in feed.items():
        if value.dtype.kind == "f" and value.size:
            lo, hi = float(value.min()), float(value.max())
            r = ranges.setdefault(name, [lo, hi])
            r[0], r[1] = min(r[0], lo), max(r[1], hi)


def _constant_warning(name: str, lo: float, hi: float, count: int) -> str:
    what = "all zeros" if lo == hi == 0 else f"constant ({lo:g} everywhere)"
    return (f"calibration input {name!r} is {what} in all {count} sample(s): ranges calibrated on it say nothing "
            "about real inputs (is the data loaded and preprocessed?)")
