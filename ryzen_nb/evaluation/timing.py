"""Wall-time measurement: warm-up, then median and p90 over repeated runs.

>>> from ryzen_nb.evaluation.timing import time_call
>>> stats = time_call(lambda: sum(range(1000)))      # {'median_ms': ..., 'p90_ms': ..., 'runs': ...}
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

__all__ = ["time_call"]


def time_call(fn: Callable[[], object], warmup: int = 3, repeats: int = 20, min_seconds: float = 0.3) -> dict[str, float]:
    """Median and p90 wall time of ``fn`` in milliseconds, after ``warmup`` untimed calls; at
    least ``repeats`` timed calls and ``min_seconds`` of timing (at most 10 x ``repeats`` calls)."""
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
