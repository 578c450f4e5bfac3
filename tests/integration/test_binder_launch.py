"""The Binder launch, as a new user would get it, on this machine: a fresh virtual environment built
from the files in ``binder/`` only (``requirements.txt``, then ``postBuild`` in a copy of the
repository), JupyterLab started from it on 127.0.0.1, the page the README's Binder badge opens
(the tutorials' index, rendered, in Chromium), the tutorials listed by the server, and notebook 1
executed cell by cell through the server's own kernel (REST + websocket, as the browser does). Slow
(a few minutes: it installs JupyterLab and ryzen-nb from the package index).

And the README's way in: it installs from this repository (ryzen-nb is not on PyPI) and links only
to files inside it (and to the Binder badge)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.ui.lab_harness import Deadline, browser_page, clear_screenshots, playwright_api, shoot

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
#: the Binder badge's link and the folder it opens, as README.md writes them
BADGE = re.compile(r"\(https://mybinder\.org/v2/gh/[^)\s]*[?&]labpath=([^)&\s]+)\)")


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


def test_readme_installs_from_the_repository_and_links_inside_it() -> None:
    text = README.read_text(encoding="utf-8")
    # ryzen-nb is not on PyPI: "pip install ryzen-nb" would install nothing (or someone else's package);
    # the tutorials' index, which a teacher follows to set up a lab, neither
    for page in (README, ROOT / "notebooks" / "README.md"):
        from_index = re.findall(r"pip install(?: -\S+)* ryzen-nb\b", page.read_text(encoding="utf-8"))
        assert not from_index, f"{page.relative_to(ROOT)} installs ryzen-nb from the package index: {from_index}"
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    outside = [link for link in links if re.match(r"[a-z]+:", link) and not link.startswith("https://mybinder.org/")]
    assert not outside, f"README.md links outside the repository: {outside}"
    missing = [link for link in links if not re.match(r"[a-z]+:", link)
               and not (ROOT / urllib.parse.unquote(link.split("#")[0])).exists()]
    assert not missing, f"README.md links files the repository does not have: {missing}"
    badge = BADGE.search(text)
    assert badge, "README.md has no Binder badge opening a path (labpath=...)"
    assert (ROOT / urllib.parse.unquote(badge.group(1))).is_file(), f"the Binder badge opens {badge.group(1)}: no such file"


def _check_the_badge_page(base: str, token: str, tmp_path: Path) -> None:
    """Open what the README's Binder badge opens (``/lab/tree/<labpath>``) in Chromium: the tutorials'
    index rendered as Markdown (not its source in the editor), with no console error."""
    labpath = urllib.parse.unquote(BADGE.search(README.read_text(encoding="utf-8")).group(1))
    sync_api = playwright_api()
    deadline = Deadline(120.0)
    clear_screenshots("binder_")
    with sync_api.sync_playwright() as playwright, \
            browser_page(playwright, sync_api, SimpleNamespace(url=base), deadline) as b:
        with b.step(f"the Binder badge's page, /lab/tree/{labpath}, shows the index rendered"):
            b.page.goto(f"{base}/lab/tree/{labpath}?token={token}", wait_until="domcontentloaded", timeout=b.ms())
            rendered = b.page.locator(".jp-MarkdownViewer .jp-RenderedMarkdown")
            b.expect(rendered.locator("h1").first).to_be_visible(timeout=b.ms())
            b.expect(rendered.locator("a[href*='.ipynb']").first).to_be_attached(timeout=b.ms())
            b.expect(b.page.locator(".jp-FileEditor:visible")).to_have_count(0)
            shoot(b.page, "binder_index")
        errors = b.problems.unexplained_console_errors()
        assert not errors, "the browser console reported errors:\n" + "\n".join(errors)
        assert not b.problems.external, f"requests tried to leave the machine: {b.problems.external}"


@pytest.mark.slow
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
        # nothing of this machine's Jupyter settings: the page shows what the Binder image's settings make
        env={**env, "RYZEN_NB_QUICK": "1", "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
             "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "lab-settings"),
             "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "lab-workspaces")},
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
        _check_the_badge_page(base, token, tmp_path)
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
