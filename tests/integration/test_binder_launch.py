"""The Binder launch, as a new user would get it, on this machine: a fresh virtual environment built
from the files in ``binder/`` only (``requirements.txt``, then ``postBuild`` in a copy of the
repository), JupyterLab started from it on 127.0.0.1, the tutorials listed by the server, and
notebook 1 executed cell by cell through the server's own kernel (REST + websocket, as the browser
does). Slow (a few minutes: it installs JupyterLab and ryzen-nb from the package index)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _copy_repository(dest: Path) -> Path:
    """The files a Binder build sees: the repository without virtual environments and caches."""
    ignore = shutil.ignore_patterns(".git", ".venv*", "__pycache__", "*.egg-info", "outputs", "node_modules",
                                    ".pytest_cache", "screenshots", "build", "dist")
    return Path(shutil.copytree(ROOT, dest / "repo", ignore=ignore))


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - our own server on 127.0.0.1
        return json.loads(response.read())


def _decode(raw: str | bytes) -> dict:
    """A kernel message from the websocket: text frames are JSON; messages with binary buffers (widget
    state, for instance) come as binary frames of Jupyter server's legacy layout: a big-endian uint32
    count, that many uint32 offsets, then the JSON message and the buffers at those offsets."""
    if isinstance(raw, str):
        return json.loads(raw)
    count = int.from_bytes(raw[:4], "big")
    offsets = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(count)] + [len(raw)]
    return json.loads(raw[offsets[0]:offsets[1]].decode("utf-8"))


def _execute(base: str, token: str, kernel_id: str, code: str, timeout: float = 300.0) -> list[dict]:
    """Run ``code`` in the kernel through the server's websocket; return the iopub messages of the cell."""
    from tornado.ioloop import IOLoop
    from tornado.websocket import websocket_connect

    msg_id = uuid.uuid4().hex

    async def run() -> list[dict]:
        ws = await websocket_connect(f"ws{base[4:]}/api/kernels/{kernel_id}/channels?token={token}")
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex, "msg_type": "execute_request",
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        messages, reply = [], None
        deadline = time.monotonic() + timeout
        while reply is None or not any(m["msg_type"] == "status" and m["content"]["execution_state"] == "idle"
                                       for m in messages):
            if time.monotonic() > deadline:
                raise TimeoutError(f"cell did not finish in {timeout:.0f} s:\n{code[:200]}")
            raw = await ws.read_message()
            if raw is None:
                raise RuntimeError("the server closed the kernel websocket")
            msg = _decode(raw)
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["channel"] == "shell" and msg["msg_type"] == "execute_reply":
                reply = msg
            elif msg["channel"] == "iopub":
                messages.append(msg)
        ws.close()
        return [reply] + messages

    return IOLoop.current().run_sync(run, timeout=timeout + 30)


def test_binder_files_launch_the_tutorials(tmp_path) -> None:
    repo = _copy_repository(tmp_path)
    venv = tmp_path / "binder-venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    bin_dir = venv / "bin"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "VIRTUAL_ENV": str(venv)}
    env.pop("PYTHONPATH", None)  # nothing of the test's own environment leaks in
    pip = [str(bin_dir / "python"), "-m", "pip", "install", "-q"]
    subprocess.run(pip + ["-r", str(repo / "binder" / "requirements.txt")], check=True, env=env, cwd=repo)
    subprocess.run(["bash", str(repo / "binder" / "postBuild")], check=True, env=env, cwd=repo)

    port, token = _free_port(), secrets.token_hex(16)
    log = tmp_path / "jupyterlab.log"
    server = subprocess.Popen(
        [str(bin_dir / "jupyter"), "lab", "--no-browser", "--allow-root",  # CI runs as root
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={repo}"],
        env={**env, "RYZEN_NB_QUICK": "1", "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config")},
        stdout=log.open("w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(240):
            try:
                _get(f"{base}/api/status?token={token}")
                break
            except OSError:
                if server.poll() is not None:
                    pytest.fail(f"JupyterLab from the Binder environment exited:\n{log.read_text()[-2000:]}")
                time.sleep(0.5)
        else:
            pytest.fail(f"JupyterLab from the Binder environment did not start within 120 s:\n{log.read_text()[-2000:]}")
        listing = _get(f"{base}/api/contents/notebooks?token={token}")
        names = {item["name"] for item in listing["content"]}
        assert "01_getting_started.ipynb" in names and "README.md" in names
        shipped = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        assert shipped <= names, f"the server does not list {sorted(shipped - names)}"
        # the JupyterLab extension came with the wheel: its server half lists the packaged tutorials
        launcher = {t["name"] + ".ipynb" for t in _get(f"{base}/ryzen-nb/tutorials?token={token}")["tutorials"]}
        assert launcher == shipped, f"the launcher's tutorials {sorted(launcher)} are not the shipped {sorted(shipped)}"

        request = urllib.request.Request(f"{base}/api/kernels?token={token}", method="POST",
                                         data=json.dumps({"name": "python3", "path": "notebooks"}).encode())
        kernel = json.loads(urllib.request.urlopen(request, timeout=60).read())  # noqa: S310
        notebook = json.loads((repo / "notebooks" / "01_getting_started.ipynb").read_text())
        # the kernel starts in the server's root: run the notebook from its own folder, as JupyterLab does
        _execute(base, token, kernel["id"], f"import os; os.chdir({str(repo / 'notebooks')!r})")
        for index, cell in enumerate(c for c in notebook["cells"] if c["cell_type"] == "code"):
            source = "".join(cell["source"])
            reply = _execute(base, token, kernel["id"], source)[0]
            assert reply["content"]["status"] == "ok", (
                f"cell {index} failed: {reply['content'].get('ename')}: {reply['content'].get('evalue')}\n{source}")
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
