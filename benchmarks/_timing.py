"""Timing helpers shared by the benchmark scripts: warm-up, then median and p90 over repeats."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import onnx
import onnxruntime as ort


def session(model: onnx.ModelProto, threads: int = 0) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    if threads:
        options.intra_op_num_threads = threads
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def time_call(fn: Callable[[], object], warmup: int = 3, repeats: int = 20, min_seconds: float = 0.3) -> dict[str, float]:
    """Median and p90 wall time of ``fn`` in milliseconds."""
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < repeats or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
        if len(samples) >= 10 * repeats:
            break
    a = np.array(samples)
    return {"median_ms": float(np.median(a)), "p90_ms": float(np.percentile(a, 90)), "runs": len(a)}
