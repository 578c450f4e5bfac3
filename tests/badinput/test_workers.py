"""The worker pool behind the JupyterLab server's analyses: results, errors, the time limit, a
dying worker, the waiting line, retiring workers."""

from __future__ import annotations

import os
import time

import pytest

from ryzen_nb.jupyter.workers import JobFailed, JobTimeout, PoolBusy, WorkerDied, WorkerPool


def square(x: int) -> int:
    return x * x


def fail(message: str) -> None:
    raise ValueError(message)


def sleep(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def die() -> None:
    os._exit(3)


def pid() -> int:
    return os.getpid()


@pytest.fixture(scope="module")
def pool():
    pool = WorkerPool(workers=1, waiting=1, jobs_per_worker=3)
    yield pool
    pool.close()


def test_a_job_runs_in_another_process(pool) -> None:
    assert pool.submit(square, 7, timeout=60).result() == 49
    assert pool.submit(pid, timeout=60).result() != os.getpid()


def test_an_exception_comes_back_as_words_and_the_worker_stays(pool) -> None:
    before = pool.submit(pid, timeout=60).result()
    with pytest.raises(JobFailed, match="ValueError: bad weights") as failure:
        pool.submit(fail, "bad weights", timeout=60).result()
    assert "Traceback" in failure.value.details
    after = pool.submit(pid, timeout=60).result()
    assert after == before or len(pool.processes) == 1  # the same worker, unless it was retired by count


def test_the_time_limit_stops_the_worker(pool) -> None:
    worker = pool.submit(pid, timeout=60).result()
    with pytest.raises(JobTimeout, match="longer than 0.5 s"):
        pool.submit(sleep, 30, timeout=0.5).result()
    assert worker not in pool.processes
    assert pool.submit(square, 3, timeout=60).result() == 9  # a new worker takes over


def test_a_dying_worker_is_replaced(pool) -> None:
    with pytest.raises(WorkerDied, match="exit code 3"):
        pool.submit(die, timeout=60).result()
    assert pool.submit(square, 4, timeout=60).result() == 16


def test_a_full_waiting_line_is_refused_at_once(pool) -> None:
    running = pool.submit(sleep, 1.5, timeout=60)
    waiting = pool.submit(square, 5, timeout=60)
    started = time.perf_counter()
    with pytest.raises(PoolBusy):
        pool.submit(square, 6, timeout=60)
    assert time.perf_counter() - started < 0.5
    assert running.result() > 0 and waiting.result() == 25


def test_workers_retire_after_their_jobs(pool) -> None:
    pids = {pool.submit(pid, timeout=60).result() for _ in range(4)}
    assert len(pids) >= 2  # 3 jobs per worker
