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
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper
from tqdm.auto import tqdm

from ryzen_nb.calibration.readers import CalibrationReader
from ryzen_nb.calibration.stats import DEFAULT_NUM_BINS, TensorStats
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.graph.prepare import PreparedModel, ort_session

__all__ = ["collect_statistics", "CalibrationResult"]

log = logging.getLogger(__name__)


@dataclass
class CalibrationResult:
    stats: dict[str, TensorStats]
    samples: int
    seconds: float


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
) -> CalibrationResult:
    """Statistics of ``tensors`` (name -> whether a histogram is needed) over the reader's samples."""
    names = list(tensors)
    stats = {n: TensorStats(histogram=tensors[n], num_bins=num_bins, moving_average=moving_average) for n in names}
    reader.bind(prepared.input_names)
    session = ort_session(_augmented(prepared.model, names)) if names else None
    start = time.perf_counter()
    try:
        total = len(reader)
    except TypeError:
        total = None
    count = 0
    bar = tqdm(total=total, desc="Calibrating", unit="sample", disable=not progress, leave=False)
    try:
        for feed in reader:
            check_feed(feed, prepared.inputs, count)
            if session is not None:
                outputs = session.run(names, dict(feed))
                for name, value in zip(names, outputs):
                    if np.issubdtype(np.asarray(value).dtype, np.floating):
                        stats[name].update(value)
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
    return CalibrationResult(stats, count, seconds)
