"""The tutorials as tests: ``pytest notebooks/`` runs every notebook top to bottom with nbval
(``--nbval-lax``: a notebook passes when no cell raises, and its last cells assert its claims).

Two things on top of nbval:

* ``RYZEN_NB_QUICK=1`` is set unless the environment says otherwise, so the test run uses the
  notebooks' smaller sizes (the same steps; users get full sizes by default). Measure the full
  sizes with ``RYZEN_NB_QUICK=0 pytest notebooks/``.
* Each notebook's wall time and its kernel's peak memory are recorded (``outputs/limits.json``)
  and a notebook over :data:`LIMIT_SECONDS` or :data:`LIMIT_MB` fails: Binder gives 2 GB.
* A notebook whose every cell passed is written with its outputs to ``build/notebooks-executed/``
  (:data:`EXECUTED`), tagged with a hash of its source: ``scripts/build_docs.py`` builds the
  documentation site from these copies instead of running the notebooks a second time.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pytest

os.environ.setdefault("RYZEN_NB_QUICK", "1")  # inherited by the kernels nbval starts

LIMIT_SECONDS = 180.0
LIMIT_MB = 1536.0
HERE = Path(__file__).resolve().parent
EXECUTED = HERE.parent / "build" / "notebooks-executed"
_started: dict[str, float] = {}
_measured: dict[str, dict[str, float]] = {}
_failed: set[str] = set()


def source_hash(notebook: dict) -> str:
    """What a notebook says (cell types and sources); the same function as scripts/build_docs.py's."""
    cells = [(c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"])
             for c in notebook["cells"]]
    return hashlib.sha256(json.dumps(cells).encode()).hexdigest()


def _keep_executed(notebook: pytest.Collector, path: Path) -> None:
    """Write the notebook with the outputs nbval collected, for the documentation site."""
    import nbformat

    original = json.loads(path.read_text(encoding="utf-8"))
    nb = notebook.nb
    count = 0
    for item in notebook.session.items:
        if getattr(item, "parent", None) is notebook and getattr(item, "test_outputs", None) is not None:
            count += 1
            item.cell.outputs = [nbformat.from_dict(o) for o in item.test_outputs]
            item.cell.execution_count = count
    nb.metadata["ryzen_nb_docs"] = {"source_sha256": source_hash(original),
                                    "quick": os.environ.get("RYZEN_NB_QUICK") == "1", "executed_by": "nbval"}
    EXECUTED.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, EXECUTED / path.name)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> object:
    outcome = yield
    if item.path.suffix == ".ipynb" and outcome.get_result().failed:
        _failed.add(str(item.path))


def _peak_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process and its children, in MB (Linux /proc; 0 elsewhere)."""
    total = 0.0
    pids = [pid]
    try:
        pids += [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024.0
        except OSError:
            continue
    return total


def _kernel_pid(notebook: pytest.Collector) -> int | None:
    kernel = getattr(notebook, "kernel", None)
    km = getattr(kernel, "km", None)
    process = getattr(getattr(km, "provisioner", None), "process", None)
    return getattr(process, "pid", None)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.path.suffix == ".ipynb":
        _started.setdefault(str(item.path), time.perf_counter())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After a notebook's last cell (its kernel is still running): record time and peak memory."""
    if item.path.suffix != ".ipynb" or (nextitem is not None and nextitem.path == item.path):
        return
    pid = _kernel_pid(item.parent)
    _measured[item.path.name] = {
        "seconds": round(time.perf_counter() - _started[str(item.path)], 1),
        "peak_mb": round(_peak_mb(pid), 1) if pid else float("nan"),
        "quick": os.environ.get("RYZEN_NB_QUICK") == "1",
    }
    if str(item.path) not in _failed:
        _keep_executed(item.parent, item.path)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _measured:
        return
    out = HERE / "outputs"
    out.mkdir(exist_ok=True)
    (out / "limits.json").write_text(json.dumps(_measured, indent=1))
    over = {name: m for name, m in _measured.items() if m["seconds"] > LIMIT_SECONDS or m["peak_mb"] > LIMIT_MB}
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line("")
        reporter.write_line(f"notebooks (limits {LIMIT_SECONDS:.0f} s, {LIMIT_MB:.0f} MB):")
        for name, m in sorted(_measured.items()):
            flag = "  <-- OVER THE LIMIT" if name in over else ""
            reporter.write_line(f"  {name:45s} {m['seconds']:7.1f} s {m['peak_mb']:8.1f} MB{flag}")
    if over:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
