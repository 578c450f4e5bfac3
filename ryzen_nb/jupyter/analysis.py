"""The .onnx viewer's analyses, off the Jupyter server's event loop.

:func:`viewer_summary` answers ``GET /ryzen-nb/onnx``: the cheap checks (path inside the root,
visible, a file, its size) run here; the summary, partition and latency estimate
(:func:`ryzen_nb.jupyter.service.summarize`) run in a worker process of a :class:`WorkerPool`, with
a time limit. Answers are cached by path, target and precision, and stay valid while the model and
its external-data files keep their modification time and size; identical requests arriving while
one is being analysed share its result instead of starting another analysis. Every failure is a
:class:`~ryzen_nb.jupyter.service.ServiceError` with the HTTP status to answer and a message for a
person.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from ryzen_nb.jupyter import service
from ryzen_nb.jupyter.service import ServiceError
from ryzen_nb.jupyter.workers import JobFailed, JobTimeout, PoolBusy, WorkerDied, WorkerPool

__all__ = ["viewer_summary", "pool", "clear_cache", "TIME_LIMIT_S", "WORKERS", "WAITING", "CACHE_ENTRIES"]

log = logging.getLogger(__name__)

#: an analysis running longer is stopped (its worker killed) and answered with 504
TIME_LIMIT_S = 120.0
#: analyses running at once (each in its own process, each holding a model in memory)
WORKERS = max(1, min(2, (os.cpu_count() or 2) - 1))
#: analyses waiting for a worker; one more request is answered 503 (busy) at once
WAITING = 8
#: answers kept (the viewer asks again for each target and precision the user picks)
CACHE_ENTRIES = 32

_pool: WorkerPool | None = None
_pool_lock = threading.Lock()
_cache: OrderedDict[tuple[str, str, str], tuple[list[tuple[str, int, int]], dict[str, Any]]] = OrderedDict()
_running: dict[tuple[Any, ...], Future] = {}


def pool() -> WorkerPool:
    """The process's worker pool (one per Jupyter server process), made on first use."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = WorkerPool(WORKERS, WAITING)
            atexit.register(_pool.close)
        return _pool


def clear_cache() -> None:
    _cache.clear()


def _unchanged(stamps: list[tuple[str, int, int]]) -> bool:
    try:
        return all((st := os.stat(path)).st_mtime_ns == mtime and st.st_size == size for path, mtime, size in stamps)
    except OSError:
        return False


async def viewer_summary(root: Path, path: str, target: str, precision: str, allow_hidden: bool) -> dict[str, Any]:
    """The viewer's answer for ``path`` (relative to ``root``); see the module docstring."""
    service.check_request(target, precision)
    file = service.locate_model(root, path, allow_hidden)
    key = (str(file), target, precision)
    cached = _cache.get(key)
    if cached is not None and _unchanged(cached[0]):
        _cache.move_to_end(key)
        return cached[1]
    info = file.stat()
    running = key + (info.st_mtime_ns, info.st_size, allow_hidden, service.MAX_MODEL_MB)
    future = _running.get(running)
    if future is None:
        try:
            future = pool().submit(service.analyse_job, str(file), str(root), target, precision,
                                   service.MAX_MODEL_MB, allow_hidden, timeout=TIME_LIMIT_S)
        except PoolBusy:
            raise ServiceError(f"The server is busy analysing other models ({WORKERS} at a time, {WAITING} waiting); "
                               "try again in a moment.", 503) from None
        _running[running] = future
    try:
        reply = await asyncio.wrap_future(future)
    except JobTimeout:
        raise ServiceError(f"Analysing {file.name} took longer than {TIME_LIMIT_S:g} s and was stopped. Open it "
                           "with ryzen_nb.npu.compile in a notebook, where it may take as long as it needs.", 504) from None
    except WorkerDied as exc:
        raise ServiceError(f"The process analysing {file.name} stopped ({exc}); the model may need more memory "
                           "than the server has. Open it with ryzen_nb.npu.compile in a notebook.", 500) from None
    except JobFailed as exc:
        log.error("ryzen-nb: analysing %s failed:\n%s", file, exc.details)
        raise ServiceError(f"Internal error while analysing {file.name} (a bug in ryzen-nb; the server log has the "
                           f"traceback): {exc}", 500) from None
    finally:
        if _running.get(running) is future:
            del _running[running]
    if reply[0] == "error":
        raise ServiceError(reply[2], reply[1])
    _, summary, stamps = reply
    _cache[key] = (stamps, summary)
    _cache.move_to_end(key)
    while len(_cache) > CACHE_ENTRIES:
        _cache.popitem(last=False)
    return summary
