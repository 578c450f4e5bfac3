"""Independent tasks run side by side: in this process, in local worker processes, or on a
dask.distributed cluster — one interface for the sweep, the mixed-precision sensitivity analysis
and anything else that evaluates many configurations of one model.

>>> from ryzen_nb.executor import get_executor
>>> ex = get_executor(2)                          # two local worker processes     # doctest: +SKIP
>>> ex = get_executor("tcp://scheduler:8786")     # a dask.distributed cluster      # doctest: +SKIP
>>> for result in ex.imap(score, configs, context=shared, desc="configs"):         # doctest: +SKIP
...     ...

``imap(fn, items, context=...)`` calls ``fn(context, item)`` for every item and yields the results
in the items' order. ``context`` is what every task shares (a prepared model, calibration
statistics, reference outputs): it is sent to each worker once, not with every task. ``items`` may
be a generator; at most ``2 x workers`` tasks are in flight, so a long stream of data chunks is
read as fast as it is consumed and memory stays bounded.

Threads: every worker runs its onnxruntime sessions and its BLAS calls (numpy) with
``threads_per_worker`` threads (default: the CPUs divided by the local workers, 1 on a cluster).
Two processes that each start a thread per core on the same cores spin against each other
(onnxruntime's and OpenBLAS's pools busy-wait), which costs more than the second process gains.
:func:`ort_threads` is what :func:`ryzen_nb.graph.prepare.ort_session` reads.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import sys
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from ryzen_nb.errors import ConfigError

__all__ = ["DaskExecutor", "Executor", "ProcessExecutor", "SerialExecutor", "busy_cores", "free_threads",
           "get_executor", "limit_threads", "ort_threads"]

#: onnxruntime intra-op threads for the sessions of this process (0: onnxruntime's default)
_ORT_THREADS = 0


def ort_threads() -> int:
    """Intra-op threads the onnxruntime sessions of this process should use (0: onnxruntime's default)."""
    return _ORT_THREADS


@contextlib.contextmanager
def limit_threads(threads: int | None) -> Iterator[None]:
    """Within the block, onnxruntime sessions made here and BLAS calls use at most ``threads``
    threads (``None``: no limit). Where onnxruntime and numpy alternate (fine-tuning, the
    sensitivity analysis) an idle BLAS pool keeps spinning while onnxruntime's threads want the
    same cores; on a machine whose cores are shared that multiplies the time several times."""
    global _ORT_THREADS
    if not threads:
        yield
        return
    from threadpoolctl import threadpool_limits

    previous = _ORT_THREADS
    _ORT_THREADS = int(threads)
    try:
        with threadpool_limits(limits=int(threads)):
            yield
    finally:
        _ORT_THREADS = previous


def _cpu_quota() -> float | None:
    """The CPUs' worth of time a cgroup quota allows this process (a container's, Binder's), or None."""
    for path, period_path in (("/sys/fs/cgroup/cpu.max", None),
                              ("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "/sys/fs/cgroup/cpu/cpu.cfs_period_us")):
        try:
            with open(path) as f:
                quota, *period = f.read().split()
            if period_path:
                with open(period_path) as f:
                    period = f.read().split()
            if quota not in ("max", "-1") and period:
                return float(quota) / float(period[0])
        except (OSError, ValueError):
            continue
    return None


def _usable_cpus() -> set[int] | None:
    """The CPUs this process may run on, or None where that is not what it may use: under a CPU
    quota below their count the machine-wide load in /proc/stat says nothing about this process."""
    try:
        cpus = set(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return None
    quota = _cpu_quota()
    return None if quota is not None and quota < len(cpus) - 0.5 else cpus


def _cpu_ticks(cpus: set[int]) -> tuple[int, int] | None:
    """(all, idle) CPU time of ``cpus`` in clock ticks since boot, from /proc/stat."""
    total = idle = 0
    try:
        with open("/proc/stat") as stat:
            for line in stat:
                name, *values = line.split()
                if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
                    continue
                # user nice system idle iowait irq softirq steal [guest guest_nice: counted in user]
                fields = [int(v) for v in values]
                total += sum(fields[:8])
                idle += fields[3] + (fields[4] if len(fields) > 4 else 0)
    except (OSError, ValueError):
        return None
    return total, idle


def busy_cores(window: float = 0.1) -> float:
    """How many of the CPUs this process may use the machine's other processes keep busy,
    measured over ``window`` seconds; 0.0 where that cannot be read (not Linux, or a CPU quota
    below those CPUs, as in a container). This process's own threads (a BLAS pool still spinning
    after its last call) do not count."""
    cpus = _usable_cpus()
    return _busy(cpus, window) if cpus else 0.0


def _busy(cpus: set[int], window: float) -> float:
    own = os.times()
    before = _cpu_ticks(cpus)
    time.sleep(window)
    after = _cpu_ticks(cpus)
    own_after = os.times()
    if before is None or after is None or after[0] <= before[0]:
        return 0.0
    total = after[0] - before[0]
    own_ticks = (own_after.user + own_after.system - own.user - own.system) * os.sysconf("SC_CLK_TCK")
    busy = total - (after[1] - before[1]) - own_ticks
    return max(0.0, busy / total) * len(cpus)


def free_threads(window: float = 0.1) -> int | None:
    """Threads for work about to start: None (no limit) while the CPUs this process may use are
    idle or their load cannot be read, else the CPUs the other processes leave free, at least one.
    Where onnxruntime runs many short calls, its threads spin between them: on a core another
    process holds that costs more than the thread gains (the mixed-precision search on a CNN:
    2.5 s quiet, 3.6-4.3 s with one of two cores busy, 3.0 s on one thread there)."""
    cpus = _usable_cpus()
    taken = round(_busy(cpus, window)) if cpus else 0
    return max(1, len(cpus) - taken) if cpus and taken > 0 else None


class Executor(ABC):
    """Runs ``fn(context, item)`` for many items; see the module docstring."""

    workers: int = 1
    threads_per_worker: int | None = None

    @abstractmethod
    def _run(self, fn: Callable[[Any, Any], Any], items: Iterable[Any], context: Any) -> Iterator[Any]:
        """Results in the items' order."""

    def imap(self, fn: Callable[[Any, Any], Any], items: Iterable[Any], *, context: Any = None,
             desc: str | None = None, total: int | None = None, progress: bool = True) -> Iterator[Any]:
        """``fn(context, item)`` for each item, in order, with a progress bar (tqdm.auto) if ``desc``."""
        from tqdm.auto import tqdm

        if total is None and hasattr(items, "__len__"):
            total = len(items)  # type: ignore[arg-type]
        bar = tqdm(total=total, desc=desc, unit="task", disable=not (progress and desc), leave=False)
        try:
            for result in self._run(fn, items, context):
                bar.update(1)
                yield result
        finally:
            bar.close()

    def map(self, fn: Callable[[Any, Any], Any], items: Iterable[Any], **kwargs: Any) -> list[Any]:
        return list(self.imap(fn, items, **kwargs))

    def close(self) -> None:  # noqa: B027 - a no-op by default, on purpose: only DaskExecutor holds anything
        """Release what the executor started (a client it created); a no-op for the others."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} workers={self.workers}>"


class SerialExecutor(Executor):
    """Everything in this process, one task after the other (``workers=1``)."""

    def __init__(self, threads_per_worker: int | None = None) -> None:
        self.threads_per_worker = threads_per_worker

    def _run(self, fn, items, context):
        with limit_threads(self.threads_per_worker):
            for item in items:
                yield fn(context, item)


# -- local processes ------------------------------------------------------------------------------------------
_context: Any = None


def _install(context_bytes: bytes, threads: int) -> None:
    """Worker initializer: the shared context, unpickled once per worker, and its thread limits."""
    global _context, _ORT_THREADS
    _context = pickle.loads(context_bytes)
    _ORT_THREADS = threads
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads)  # for the worker's life: it only ever runs these tasks


def _call(fn: Callable[[Any, Any], Any], item: Any) -> Any:
    return fn(_context, item)


def _started() -> int:
    return os.getpid()


@contextlib.contextmanager
def _main_not_rerun() -> Iterator[None]:
    """While workers start, hide the ``__main__`` script from ``spawn``: it would run the script again
    in every worker (and fail in one without an ``if __name__ == "__main__":`` guard). The tasks only
    need ryzen_nb's module-level functions, which the workers import by name."""
    main = sys.modules.get("__main__")
    saved = {k: main.__dict__[k] for k in ("__file__", "__spec__") if main is not None and k in main.__dict__}
    try:
        if main is not None:
            main.__dict__.pop("__file__", None)
            main.__spec__ = None
        yield
    finally:
        if main is not None:
            main.__dict__.pop("__spec__", None)
            main.__dict__.update(saved)


class ProcessExecutor(Executor):
    """``workers`` local processes (started with ``spawn``: a forked copy of a process whose
    onnxruntime thread pools already run can deadlock). The context is pickled once and unpickled
    once per worker; ``fn`` and everything in the context must be importable by module name (not
    defined in the ``__main__`` script)."""

    def __init__(self, workers: int | None = None, threads_per_worker: int | None = None) -> None:
        self.workers = max(1, int(workers or os.cpu_count() or 1))
        self.threads_per_worker = threads_per_worker or max(1, (os.cpu_count() or 1) // self.workers)

    def _run(self, fn, items, context):
        blob = pickle.dumps(context, protocol=pickle.HIGHEST_PROTOCOL)
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_install,
                                 initargs=(blob, self.threads_per_worker)) as pool:
            with _main_not_rerun():  # all workers now: the pool starts them lazily, one per submit
                for started in [pool.submit(_started) for _ in range(self.workers)]:
                    started.result()
            pending: deque = deque()
            iterator = iter(items)
            for item in iterator:
                pending.append(pool.submit(_call, fn, item))
                if len(pending) >= 2 * self.workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()


# -- dask.distributed -----------------------------------------------------------------------------------------
def _dask_call(fn: Callable[[Any, Any], Any], context: Any, item: Any, threads: int) -> Any:
    with limit_threads(threads):
        return fn(context, item)


class DaskExecutor(Executor):
    """Tasks on a dask.distributed cluster: a ``Client``, or a scheduler address (a client is then
    made, and closed by :meth:`close`). The context is scattered to every worker once."""

    def __init__(self, client: Any, threads_per_worker: int = 1) -> None:
        # deferred: dask is an optional dependency (the "distributed" extra), imported only when a
        # cluster is asked for
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ConfigError("A dask cluster needs dask.distributed: pip install 'ryzen-nb[distributed]'.") from exc
        self._own = not isinstance(client, Client)
        self.client = Client(client) if self._own else client
        self.workers = max(1, len(self.client.scheduler_info().get("workers", {})))
        self.threads_per_worker = threads_per_worker

    def _run(self, fn, items, context):
        from distributed import as_completed

        shared = self.client.scatter(context, broadcast=True, hash=False)
        pending: dict[Any, int] = {}
        done: dict[int, Any] = {}
        stream = as_completed()
        iterator, index, next_out = iter(items), 0, 0
        exhausted = False
        try:
            while True:
                while not exhausted and len(pending) < 2 * self.workers:
                    try:
                        item = next(iterator)
                    except StopIteration:
                        exhausted = True
                        break
                    future = self.client.submit(_dask_call, fn, shared, item, self.threads_per_worker, pure=False)
                    pending[future] = index
                    stream.add(future)
                    index += 1
                while next_out in done:
                    yield done.pop(next_out)
                    next_out += 1
                if not pending:
                    if exhausted:
                        return
                    continue
                future = next(stream)
                done[pending.pop(future)] = future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        if self._own:
            self.client.close()

    def __repr__(self) -> str:
        return f"<DaskExecutor {self.client.scheduler.address} workers={self.workers}>"


def get_executor(executor: Any = None, *, default_workers: int | None = 1) -> Executor:
    """An :class:`Executor` from what a user passes:

    * ``None`` — ``default_workers`` local processes (1: this process; None: one per CPU);
    * an int ``n`` — ``n`` local processes (1: this process);
    * ``"serial"`` or ``"processes"`` — this process, or one local process per CPU;
    * a ``dask.distributed.Client`` or a scheduler address (``"tcp://host:8786"``) — that cluster;
    * an :class:`Executor` — itself.
    """
    if isinstance(executor, Executor):
        return executor
    if executor is None:
        if default_workers is None:
            return ProcessExecutor() if (os.cpu_count() or 1) > 1 else SerialExecutor()
        executor = default_workers
    if isinstance(executor, bool):
        raise ConfigError(f"executor must be a number of workers, 'serial', 'processes', a dask Client or a "
                          f"scheduler address; got {executor!r}.")
    if isinstance(executor, int):
        if executor < 1:
            raise ConfigError(f"executor: the number of workers must be at least 1; got {executor}.")
        return SerialExecutor() if executor == 1 else ProcessExecutor(executor)
    if isinstance(executor, str):
        if executor == "serial":
            return SerialExecutor()
        if executor == "processes":
            return ProcessExecutor()
        if "://" in executor or ":" in executor:
            return DaskExecutor(executor)
        raise ConfigError(f"executor {executor!r}: use 'serial', 'processes', a number of workers, a dask Client "
                          "or a scheduler address such as 'tcp://127.0.0.1:8786'.")
    if type(executor).__name__ == "Client" and type(executor).__module__.startswith("distributed"):
        return DaskExecutor(executor)
    raise ConfigError(f"executor must be a number of workers, 'serial', 'processes', a dask Client or a scheduler "
                      f"address; got a {type(executor).__name__}.")
