"""Worker processes for the JupyterLab extension's heavy requests, so the Jupyter server never freezes.

The .onnx viewer parses a model, partitions it and estimates its latency: seconds of pure-Python
work on a large model, holding the GIL the whole time. On the server's event loop that stops every
kernel, terminal and file save of every user; in a thread it still starves the loop (the GIL). So
the work runs in separate processes:

* at most ``workers`` jobs run at once and at most ``waiting`` more wait for a worker; a job beyond
  that is refused at once (:class:`PoolBusy`) instead of queueing without end;
* a job has a time limit: a worker past it is killed and replaced (:class:`JobTimeout`);
* a worker that dies (out of memory, a crash in a native library) is replaced (:class:`WorkerDied`);
* a worker is retired after ``jobs_per_worker`` jobs, which returns the memory a large model left.

Workers are started with ``spawn`` (a fork of a server with running threads is unsafe), lazily, and
are daemons: they end with the server. A job is a module-level function and its arguments; it
returns a picklable value. The event loop waits on :meth:`WorkerPool.submit`'s future with
``asyncio.wrap_future``; the waiting itself happens in daemon threads that hold no GIL while they
wait (and, being daemons, never hold up the server's exit).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["WorkerPool", "PoolBusy", "JobTimeout", "WorkerDied", "JobFailed"]


class PoolBusy(Exception):
    """Every worker is busy and the waiting line is full."""


class JobTimeout(Exception):
    """A job ran past its time limit; its worker was stopped."""


class WorkerDied(Exception):
    """The worker process ended during a job (killed for memory, a crash in native code)."""


class JobFailed(Exception):
    """The job raised; ``str()`` is ``Type: message``, ``details`` the worker's traceback."""

    def __init__(self, message: str, details: str) -> None:
        super().__init__(message)
        self.details = details


def _serve(conn: Connection) -> None:
    """A worker's loop: run ``(function, args)`` jobs until told to stop (``None``) or orphaned."""
    # Ctrl-C in the terminal that runs Jupyter reaches the whole process group: the server decides
    # when workers end (they are daemons), a KeyboardInterrupt here would only print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(5)  # the server and the kernels come first
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        fn, args = job
        try:
            reply: tuple[Any, ...] = ("ok", fn(*args))
        except BaseException as exc:  # noqa: BLE001 - reported to the server, which answers with it
            reply = ("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc())
        try:
            conn.send(reply)
        except Exception as exc:  # noqa: BLE001 - e.g. a result that does not pickle
            conn.send(("failed", f"{type(exc).__name__}: {exc}", traceback.format_exc()))


class _Worker:
    def __init__(self, context: Any) -> None:
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True, name="ryzen-nb-worker")
        self.process.start()
        child.close()
        self.jobs = 0

    def call(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        self.jobs += 1
        self.conn.send((fn, args))
        # poll() also returns when the worker died: recv() then raises EOFError
        if not self.conn.poll(timeout):
            self.stop(kill=True)
            raise JobTimeout(f"the job took longer than {timeout:g} s")
        try:
            reply = self.conn.recv()
        except (EOFError, OSError):
            self.process.join(1)
            raise WorkerDied(f"the worker process ended (exit code {self.process.exitcode})") from None
        if reply[0] == "ok":
            return reply[1]
        raise JobFailed(reply[1], reply[2])

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def stop(self, kill: bool = False) -> None:
        if not kill:
            with contextlib.suppress(OSError, ValueError):
                self.conn.send(None)
            self.process.join(2)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(2)
        self.conn.close()


class WorkerPool:
    """Up to ``workers`` processes running jobs, ``waiting`` more jobs in line (see the module docstring)."""

    def __init__(self, workers: int = 2, waiting: int = 8, jobs_per_worker: int = 25) -> None:
        self.workers = max(1, workers)
        self.waiting = max(0, waiting)
        self.jobs_per_worker = jobs_per_worker
        self._context = multiprocessing.get_context("spawn")
        self._slots = threading.BoundedSemaphore(self.workers)
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._pending = 0
        self._closed = False

    def submit(self, fn: Callable[..., Any], *args: Any, timeout: float) -> Future:
        """Run ``fn(*args)`` in a worker; the future gives its result or raises :class:`JobTimeout`,
        :class:`WorkerDied` or :class:`JobFailed`. Raises :class:`PoolBusy` at once when full."""
        with self._lock:
            if self._closed:
                raise PoolBusy("the worker pool is shut down")
            if self._pending >= self.workers + self.waiting:
                raise PoolBusy(f"{self.workers} job(s) running and {self.waiting} waiting")
            self._pending += 1
        future: Future = Future()
        threading.Thread(target=self._job, args=(future, fn, args, timeout), daemon=True,
                         name="ryzen-nb-pool").start()
        return future

    def _job(self, future: Future, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> None:
        try:
            result = self._run(fn, args, timeout)
        except BaseException as exc:  # noqa: BLE001 - handed to whoever awaits the future
            future.set_exception(exc)
        else:
            future.set_result(result)
        finally:
            with self._lock:
                self._pending -= 1

    def _run(self, fn: Callable[..., Any], args: tuple[Any, ...], timeout: float) -> Any:
        with self._slots:
            worker = self._take()
            try:
                result = worker.call(fn, args, timeout)
            except (JobTimeout, WorkerDied):
                self._discard(worker)
                raise
            except BaseException:
                self._give_back(worker)
                raise
            self._give_back(worker)
            return result

    def _take(self) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.alive:
                    return worker
                self._all.discard(worker)
        worker = _Worker(self._context)
        with self._lock:
            self._all.add(worker)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        if not worker.alive or worker.jobs >= self.jobs_per_worker or self._closed:
            self._discard(worker)
            return
        with self._lock:
            self._idle.append(worker)

    def _discard(self, worker: _Worker) -> None:
        with self._lock:
            self._all.discard(worker)
        worker.stop(kill=not worker.alive)

    @property
    def pending(self) -> int:
        """Jobs accepted and not finished (running or waiting)."""
        with self._lock:
            return self._pending

    @property
    def processes(self) -> list[int]:
        """Process ids of the live workers (for tests and monitoring)."""
        with self._lock:
            return [w.process.pid for w in self._all if w.alive]

    def close(self) -> None:
        """Stop every worker now (a running job ends with :class:`WorkerDied`); refuse new jobs."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = [w for w in self._all if w not in idle]
        for worker in idle:
            self._discard(worker)
        for worker in busy:  # its thread sees the pipe close and discards it
            with contextlib.suppress(OSError, ValueError):
                worker.process.kill()
