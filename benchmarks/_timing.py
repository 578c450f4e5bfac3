"""Timing helpers shared by the benchmark scripts: a quiet session, and the package's ``time_call``
(warm-up, then median and p90 over repeats)."""

from __future__ import annotations

import onnx
import onnxruntime as ort

from ryzen_nb.evaluation.timing import time_call

__all__ = ["session", "time_call"]


def session(model: onnx.ModelProto, threads: int = 0) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
