"""Run a model over many single-sample feeds, several samples per onnxruntime call where the
graph allows it.

Models exported for the NPU have a fixed batch of 1, and calibration data arrives one sample per
feed. The algorithms (fine-tuning, bias correction, sensitivity analysis) run such models thousands
of times, and on small models most of each call is overhead. :class:`SampleRunner` tries a copy of
the model whose batch dimension is free (a constant ``Reshape`` to ``[1, ...]``, as BERT exports
have, reshapes to ``[-1, ...]`` there); if the graph still pins it (a ``Reshape`` to ``[1, -1]``), or
a check run disagrees with the one-sample model, it falls back to one call per sample. The results
are the same either way, per sample.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx import numpy_helper

from ryzen_nb.graph.index import ModelIndex
from ryzen_nb.graph.prepare import ort_session

__all__ = ["SampleRunner", "batch_agrees"]

#: samples per call in batched mode: enough to amortise the call, small enough for memory
DEFAULT_CHUNK = 16


class SampleRunner:
    """``run(names, samples, extra)`` yields, per sample, a dict of the requested tensors.

    ``samples`` are feeds of the model's data inputs, each with batch 1 along axis 0; ``extra``
    feeds inputs shared by every sample (weights fed as graph inputs, say), never batched.
    Intermediate tensors can be requested if they are graph outputs of ``model``.
    """

    def __init__(self, model: onnx.ModelProto, chunk: int = DEFAULT_CHUNK, batched: bool | None = None) -> None:
        """``batched``: whether batched calls work, when an earlier runner found it out for a model
        of the same graph (another quantization of it): no check run then."""
        self.model = model
        self.chunk = chunk
        self._single: Any = None
        self._batched: Any = None
        #: None: not tried yet; True/False: batched calls work / do not for this model
        self.batched_ok: bool | None = (None if batched is None else bool(batched)) if chunk > 1 else False
        self._data_inputs: list[str] = []
        self._batched_model: onnx.ModelProto | None = None
        self._batch_first: dict[tuple[str, ...], bool] = {}
        self._shapes: dict[str, list] | None = None

    @property
    def single(self) -> Any:
        if self._single is None:
            self._single = ort_session(self.model)
        return self._single

    def run(self, names: Sequence[str], samples: Sequence[Mapping[str, np.ndarray]],
            extra: Mapping[str, np.ndarray] | None = None) -> Iterator[dict[str, np.ndarray]]:
        names = list(names)
        extra = dict(extra or {})
        i = 0
        if self.batched_ok is None and len(samples) > 1:
            self.batched_ok = self._try_batched(names, samples, extra)
        while i < len(samples):
            part = samples[i : i + self.chunk]
            outs = None
            if self.batched_ok and len(part) > 1 and self.carries_batch_first(names):
                if self._batched is None:  # known to work (``batched=True``): no check run
                    self._data_inputs = list(samples[0])
                    self._batched = self._batched_session()
                try:
                    outs = self._batched_run(names, part, extra)
                except _NotBatchable:  # one of ``names`` does not grow along its first dimension
                    self._batch_first[tuple(names)] = False
            if outs is not None:
                for j in range(len(part)):
                    yield {n: v[j : j + 1] for n, v in outs.items()}
            else:
                for s in part:
                    yield dict(zip(names, self.single.run(names, {**s, **extra})))
            i += len(part)

    def carries_batch_first(self, names: Sequence[str]) -> bool:
        """Whether each of ``names`` is 1 along its first dimension for one sample, so that a batch
        stacks samples there. The check run saw only the names it was asked for: PP-OCRv4's
        recognizer has a [time, channels] layer input, which a batch of 2 turns into [2 x time, ...]
        (the algorithms stopped on an internal error, or, where the lengths match, would read the
        wrong rows); such names run one sample per call."""
        key = tuple(names)
        if key not in self._batch_first:
            if self._shapes is None:
                self._shapes = ModelIndex(self.model).shapes
            self._batch_first[key] = all((self._shapes.get(n) or [None])[:1] == [1] for n in names)
        return self._batch_first[key]

    # -- batched mode -------------------------------------------------------------------------------
    @property
    def batched_model(self) -> onnx.ModelProto:
        """The copy batched calls run (:func:`_free_batch`: a free first dimension, Reshapes to
        ``[1, ...]`` as ``[-1, ...]``); parts of it run batched as it does (segments)."""
        if self._batched_model is None:
            self._batched_model = _free_batch(self.model, self._data_inputs)
        return self._batched_model

    def _batched_session(self) -> Any:
        # quiet: a graph that pins batch 1 fails in Reshape, which is expected here
        return ort_session(self.batched_model, log_severity_level=4)

    def _batched_run(self, names: list[str], part: Sequence[Mapping[str, np.ndarray]],
                     extra: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {n: np.concatenate([np.asarray(s[n]) for s in part]) for n in self._data_inputs}
        outs = dict(zip(names, self._batched.run(names, {**feed, **extra})))
        for n, v in outs.items():
            if v.ndim == 0 or v.shape[0] != len(part):
                raise _NotBatchable(n)
        return outs

    def _try_batched(self, names: list[str], samples: Sequence[Mapping[str, np.ndarray]],
                     extra: Mapping[str, np.ndarray]) -> bool:
        """Whether a two-sample batched call gives the per-sample results (shapes and values)."""
        self._data_inputs = list(samples[0])
        if not _batchable(self.model, self._data_inputs) or any(
                set(s) != set(self._data_inputs) or any(np.shape(s[n])[:1] != (1,) for n in self._data_inputs)
                for s in samples[:2]):
            return False
        try:
            self._batched = self._batched_session()
            outs = self._batched_run(names, samples[:2], extra)
        except Exception:  # any failure (Reshape to batch 1, shape checks): one sample per call
            self._batched = None
            return False
        for j in range(2):
            expected = self.single.run(names, {**samples[j], **extra})
            for n, e in zip(names, expected):
                if not _close(outs[n][j : j + 1], e):
                    self._batched = None
                    return False
        return True


class _NotBatchable(RuntimeError):
    pass


def _batchable(model: onnx.ModelProto, names: list[str]) -> bool:
    """Whether the data inputs ``names`` all have a first dimension of 1 (or a free one)."""
    for vi in model.graph.input:
        if vi.name in names:
            dims = vi.type.tensor_type.shape.dim
            if not dims or (dims[0].HasField("dim_value") and dims[0].dim_value != 1):
                return False
    return True


def _free_batch(model: onnx.ModelProto, inputs: list[str]) -> onnx.ModelProto:
    """A copy whose data inputs and outputs have a free first dimension and no stored inner
    shapes (they hold batch 1); onnxruntime infers them again. A constant Reshape target that
    starts with 1 (``[1, 32, 4, 32]``: BERT exports pin their batch so) starts with -1 instead,
    which is the same shape for one sample and takes the batch for several; the check run
    against single samples tells whether the graph really batches."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for vi in [vi for vi in m.graph.input if vi.name in inputs] + list(m.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if dims:
            dims[0].Clear()
            dims[0].dim_param = "batch"
    del m.graph.value_info[:]
    readers: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in m.graph.node:
        for k, name in enumerate(node.input):
            readers.setdefault(name, []).append((node, k))
    for init in m.graph.initializer:
        uses = readers.get(init.name, [])
        if not uses or any(node.op_type != "Reshape" or k != 1 for node, k in uses):
            continue
        shape = numpy_helper.to_array(init)
        if shape.ndim == 1 and shape.size > 1 and shape[0] == 1 and -1 not in shape:
            init.CopyFrom(numpy_helper.from_array(np.concatenate([[-1], shape[1:]]).astype(shape.dtype), init.name))
    return m


def batch_agrees(batched: np.ndarray, single: np.ndarray, copies: int) -> bool:
    """Whether ``batched`` — a model's output for ``copies`` copies of one sample stacked along the
    batch — holds ``single``, its output for the sample alone, once per copy along some axis
    (outputs need not keep the batch first: a CRNN's logits are [time, batch, classes])."""
    if batched.shape == single.shape:  # an output that does not depend on the batch
        return _close(batched, single)
    for axis in range(single.ndim):
        if batched.shape[axis] == copies * single.shape[axis] and \
                batched.shape[:axis] + batched.shape[axis + 1:] == single.shape[:axis] + single.shape[axis + 1:]:
            return all(_close(part, single) for part in np.split(batched, copies, axis=axis))
    return False


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shapes, and values equal up to the last bits of float summation order (a quantized
    model may flip a rounding, so a small share of elements may differ by one step)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind not in "fc":
        return bool(np.mean(a != b) <= 0.01)
    scale = float(np.mean(np.abs(b))) or 1.0
    return bool(np.mean(np.abs(a.astype(np.float64) - b)) <= 1e-3 * scale)
