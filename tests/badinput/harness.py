"""How the bad-input suite judges an outcome: clear, unclear, wrong or lost.

Every case runs one bad input through one surface (the Python API, the command line, a widget, the
JupyterLab server) and is judged the same way:

* **lost** — a file that existed before the case (the model, its external data, calibration files,
  a config) changed or vanished;
* **wrong** — the call succeeded although the input is bad, or left a file behind (a temporary
  file, a half-written output);
* **unclear** — it failed, but not as a person can act on: a raw exception (numpy's, PIL's,
  protobuf's, an ``IsADirectoryError``), a traceback on the command line, an HTTP 500, or a
  message that does not name what is wrong (the file, the option, both paths);
* **clear** — the expected error type with a message naming what is wrong.

Each test asserts "clear" (and the exact error type); the outcome is also recorded so that a run
can report the counts (``RYZEN_NB_BADINPUT_TALLY=counts.json``, and the terminal summary).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ryzen_nb import errors

KINDS = ("clear", "unclear", "wrong", "lost")
#: nodeid -> kind, for the run's summary
TALLY: dict[str, str] = {}
#: the guard's error type (absent from the code before issue 16: then any RyzenNBError counts for the tally)
OutputPathError = getattr(errors, "OutputPathError", errors.RyzenNBError)

#: a message fragment, or alternatives of which one must appear (case-insensitive)
Fragment = str | tuple[str, ...]


@dataclass
class Snapshot:
    """Every file under ``root`` (bytes digest and permission bits; symbolic links as their target)."""

    root: Path
    files: dict[str, tuple[str, int]] = field(default_factory=dict)

    @classmethod
    def take(cls, root: Path) -> Snapshot:
        snap = cls(root)
        for folder, dirs, names in os.walk(root):
            for name in dirs + names:
                path = Path(folder) / name
                rel = str(path.relative_to(root))
                if path.is_symlink():
                    snap.files[rel] = ("link:" + os.readlink(path), 0)
                elif path.is_file():
                    snap.files[rel] = (_digest(path), path.stat().st_mode & 0o777)
                elif path.is_dir():
                    snap.files[rel] = ("dir", 0)
        return snap

    def compare(self, ignore: Iterable[str] = ()) -> tuple[list[str], list[str]]:
        """(changed or removed, added) since the snapshot; ``ignore`` are added paths that are fine."""
        now = Snapshot.take(self.root).files
        lost = sorted(k for k, v in self.files.items() if now.get(k) != v)
        skip = set(ignore)
        added = sorted(k for k in now if k not in self.files and k not in skip)
        return lost, added


def _digest(path: Path, whole: int = 8 * 2**20) -> str:
    """The file's SHA-256, or for a large file (a sparse 600 MB stand-in, a 300 MB model) its size,
    modification time and the digest of its first and last MB: a write changes the time."""
    info = path.stat()
    if info.st_size <= whole:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    with open(path, "rb") as f:
        head = f.read(2**20)
        f.seek(-(2**20), os.SEEK_END)
        tail = f.read()
    return f"{info.st_size}:{info.st_mtime_ns}:{hashlib.sha256(head + tail).hexdigest()}"


@dataclass
class Outcome:
    kind: str
    detail: str


@dataclass
class CliResult:
    status: int | None
    stdout: str
    stderr: str
    escaped: BaseException | None = None  #: an exception main() let out: the user sees a traceback


def run_cli(argv: Sequence[str]) -> CliResult:
    """``ryzen-nb ARGV`` in this process (as the console script runs it), output captured."""
    from ryzen_nb.cli import main

    out, err = io.StringIO(), io.StringIO()
    escaped = None
    status: int | None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        status = exc.code if isinstance(exc.code, int) else 2
    except Exception as exc:  # noqa: BLE001 - that is the finding
        status, escaped = None, exc
    return CliResult(status, out.getvalue(), err.getvalue(), escaped)


def _missing(text: str, fragments: Sequence[Fragment]) -> list[Fragment]:
    low = text.lower()
    return [f for f in fragments
            if not any(alt.lower() in low for alt in ((f,) if isinstance(f, str) else f))]


def judge_files(snapshot: Snapshot | None, ignore: Iterable[str] = ()) -> Outcome | None:
    if snapshot is None:
        return None
    lost, added = snapshot.compare(ignore)
    if lost:
        return Outcome("lost", f"changed or removed: {lost}")
    if added:
        return Outcome("wrong", f"left behind: {added}")
    return None


def judge_exception(raised: BaseException | None, expected: type[BaseException], fragments: Sequence[Fragment],
                    snapshot: Snapshot | None = None) -> Outcome:
    """The outcome of a Python call (or a widget callback) that should raise ``expected``."""
    files = judge_files(snapshot)
    if files is not None and files.kind == "lost":
        return files
    if raised is None:
        return Outcome("wrong", "no error: the bad input was accepted")
    if files is not None:
        return files
    text = f"{type(raised).__name__}: {raised}"
    if not isinstance(raised, errors.RyzenNBError):
        return Outcome("unclear", f"raw exception {text}")
    missing = _missing(str(raised), fragments)
    if missing:
        return Outcome("unclear", f"message lacks {missing}: {text}")
    if not isinstance(raised, expected):
        # clear to a person, so counted clear; the test itself still asserts the exact type
        return Outcome("clear", f"clear, but {type(raised).__name__} instead of {expected.__name__}: {raised}")
    return Outcome("clear", text)


def judge_cli(result: CliResult, fragments: Sequence[Fragment], snapshot: Snapshot | None = None,
              command: str | None = None) -> Outcome:
    """A command line that should fail with one ``error:`` line, exit status 2 and no traceback."""
    files = judge_files(snapshot)
    if files is not None and files.kind == "lost":
        return files
    if result.escaped is not None:
        return Outcome("unclear", f"traceback: {type(result.escaped).__name__}: {result.escaped}")
    if result.status == 0:
        return Outcome("wrong", "exit status 0: the bad input was accepted")
    if files is not None:
        return files
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    prefix = f"ryzen-nb {command}: error:" if command else "error:"
    if "Traceback" in result.stderr:
        return Outcome("unclear", f"traceback on stderr: {result.stderr[-400:]}")
    if result.status != 2 or len(lines) != 1 or prefix not in lines[0]:
        return Outcome("unclear", f"status {result.status}, stderr {result.stderr[-400:]!r}")
    missing = _missing(lines[0], fragments)
    if missing:
        return Outcome("unclear", f"message lacks {missing}: {lines[0]}")
    return Outcome("clear", lines[0])


def judge_http(status: int, body: Any, expected_status: int, fragments: Sequence[Fragment],
               snapshot: Snapshot | None = None) -> Outcome:
    """A server answer that should be ``expected_status`` with ``{"error": "..."}`` for a person."""
    files = judge_files(snapshot)
    if files is not None and files.kind == "lost":
        return files
    if 200 <= status < 300:
        return Outcome("wrong", f"HTTP {status}: the bad request was served")
    if files is not None:
        return files
    message = body.get("error") if isinstance(body, dict) else None
    if not isinstance(message, str):
        return Outcome("unclear", f"HTTP {status} without an error message: {str(body)[:300]}")
    if status >= 500 and expected_status < 500:
        return Outcome("unclear", f"HTTP {status}: {message}")
    missing = _missing(message, fragments)
    if missing:
        return Outcome("unclear", f"HTTP {status}, message lacks {missing}: {message}")
    if status != expected_status:
        return Outcome("clear", f"clear, but HTTP {status} instead of {expected_status}: {message}")
    return Outcome("clear", f"HTTP {status}: {message}")


def call(fn: Callable[[], Any]) -> BaseException | None:
    """Run ``fn``; the exception it raised, or None."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - judged by the caller
        return exc
    return None
