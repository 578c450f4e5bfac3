"""Hostile and broken requests to the JupyterLab extension's server, and a load test: every
failure is an HTTP error with ``{"error": "..."}`` for a person, nothing in the server's folder
changes, authentication, path and XSRF checks hold, and the server keeps answering while a large
model is analysed."""

from __future__ import annotations

import ast
import asyncio
import json
import time
from pathlib import Path
from typing import Any

import nbformat
import onnx
import pytest

from ryzen_nb.testing import resnet_cnn
from tests.badinput.harness import Outcome, Snapshot, judge_http
from tests.badinput.server_models import big_model, populate


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"ryzen_nb.jupyter": True}}}


@pytest.fixture
def served(jp_root_dir) -> Path:
    populate(jp_root_dir)
    return jp_root_dir


async def request(jp_fetch, *path: str, method: str = "GET", body: bytes | None = None,
                  headers: dict[str, str] | None = None, timeout: float = 60, **params: str) -> tuple[int, Any, Any]:
    """(status, JSON body or text, response) without raising for an error status."""
    kwargs: dict[str, Any] = {"method": method, "params": params, "raise_error": False, "request_timeout": timeout}
    if body is not None:
        kwargs["body"] = body
    if headers is not None:
        kwargs["headers"] = headers
    response = await jp_fetch(*path, **kwargs)
    text = response.body.decode(errors="replace") if response.body else ""
    try:
        return response.code, json.loads(text), response
    except ValueError:
        return response.code, text, response


VIEWER = [
    ("traversal", {"path": "../../etc/passwd"}, 403, ["outside"]),
    ("traversal-encoded", {"path": "work/../../x.onnx"}, 403, ["outside"]),
    ("symlink-out-of-root", {"path": "escape.onnx"}, 403, ["outside"]),
    ("absolute-path", {"path": "/etc/passwd"}, 404, ["/etc/passwd"]),
    ("hidden-file", {"path": ".secret.onnx"}, 404, ["hidden", ".secret.onnx"]),
    ("file-in-hidden-folder", {"path": ".cache/m.onnx"}, 404, ["hidden", ".cache/m.onnx"]),
    ("visible-link-to-hidden", {"path": "visible.onnx"}, 404, ["hidden", "visible.onnx"]),
    ("missing", {"path": "missing.onnx"}, 404, ["missing.onnx"]),
    ("a-folder", {"path": "dir.onnx"}, 400, ["dir.onnx", "folder"]),
    ("no-path", {}, 400, ["path"]),
    ("not-onnx", {"path": "notes.onnx"}, 415, ["notes.onnx", "not an ONNX model"]),
    ("empty-file", {"path": "empty.onnx"}, 415, ["empty.onnx"]),
    ("truncated", {"path": "trunc.onnx"}, 415, ["trunc.onnx"]),
    ("external-data-over-limit", {"path": "huge.onnx"}, 413, ["huge.onnx", "600 MB", "512"]),
    ("external-data-missing", {"path": "gone.onnx"}, 404, ["gone.bin"]),
    ("external-data-outside", {"path": "climb.onnx"}, 403, ["outside"]),
    ("external-data-hidden", {"path": "hidden-data.onnx"}, 404, ["hidden", ".weights/w.bin"]),
    ("unknown-target", {"path": "cnn.onnx", "target": "XDNA9"}, 400, ["XDNA9", "STX"]),
    ("unknown-precision", {"path": "cnn.onnx", "precision": "INT3"}, 400, ["INT3", "XINT8"]),
    ("target-injection", {"path": "cnn.onnx", "target": "<script>alert(1)</script>"}, 400, ["STX"]),
]


@pytest.mark.parametrize(("params", "status", "fragments"), [v[1:] for v in VIEWER], ids=[v[0] for v in VIEWER])
async def test_the_viewer_refuses_in_words(jp_fetch, served, params, status, fragments, judge) -> None:
    before = Snapshot.take(served)
    code, body, _ = await request(jp_fetch, "ryzen-nb", "onnx", **params)
    judge(judge_http(code, body, status, fragments, before))
    assert code == status


NOTEBOOK = [
    ("not-json", b"{path: cnn.onnx}", 400, ["JSON"]),
    ("a-list", b'["cnn.onnx"]', 400, ["JSON object"]),
    ("outside", b'{"path": "../x.onnx"}', 403, ["outside"]),
    ("hidden", b'{"path": ".secret.onnx"}', 404, ["hidden"]),
    ("in-hidden-folder", b'{"path": ".cache/m.onnx"}', 404, ["hidden"]),
    ("not-onnx", b'{"path": "notes.txt"}', 400, ["notes.txt", ".onnx"]),
    ("missing", b'{"path": "nothing.onnx"}', 404, ["nothing.onnx"]),
]


@pytest.mark.parametrize(("body", "status", "fragments"), [v[1:] for v in NOTEBOOK], ids=[v[0] for v in NOTEBOOK])
async def test_the_notebook_writer_refuses_in_words(jp_fetch, served, body, status, fragments, judge) -> None:
    before = Snapshot.take(served)
    code, answer, _ = await request(jp_fetch, "ryzen-nb", "quantize-notebook", method="POST", body=body)
    judge(judge_http(code, answer, status, fragments, before))
    assert code == status


COPY = [
    ("outside", "01_getting_started", b'{"directory": "../.."}', 403, ["outside"]),
    ("hidden-folder", "01_getting_started", b'{"directory": ".private"}', 404, ["hidden"]),
    ("a-file", "01_getting_started", b'{"directory": "notes.txt"}', 404, ["notes.txt"]),
    ("unknown-tutorial", "01_getting_startd", b"{}", 404, ["01_getting_started"]),
    ("not-json", "01_getting_started", b"directory=work", 400, ["JSON"]),
]


@pytest.mark.parametrize(("name", "body", "status", "fragments"), [v[1:] for v in COPY], ids=[v[0] for v in COPY])
async def test_the_tutorial_copy_refuses_in_words(jp_fetch, served, name, body, status, fragments, judge) -> None:
    before = Snapshot.take(served)
    code, answer, _ = await request(jp_fetch, "ryzen-nb", "tutorials", name, "copy", method="POST", body=body)
    judge(judge_http(code, answer, status, fragments, before))
    assert code == status


UNAUTHENTICATED = [
    ("tutorials", ("tutorials",), "GET", None),
    ("facts", ("facts",), "GET", None),
    ("onnx", ("onnx",), "GET", None),
    ("copy", ("tutorials", "01_getting_started", "copy"), "POST", b'{"directory": "work"}'),
    ("quantize-notebook", ("quantize-notebook",), "POST", b'{"path": "cnn.onnx"}'),
]


@pytest.mark.parametrize(("parts", "method", "body"), [u[1:] for u in UNAUTHENTICATED],
                         ids=[u[0] for u in UNAUTHENTICATED])
async def test_every_endpoint_needs_a_login(jp_fetch, served, parts, method, body, judge) -> None:
    before = Snapshot.take(served)
    code, answer, _ = await request(jp_fetch, "ryzen-nb", *parts, method=method, body=body,
                                    headers={"Authorization": ""}, path="cnn.onnx")
    judge(judge_http(code, answer, 403, [("log", "forbidden")], before))
    assert code == 403


async def test_a_post_without_the_xsrf_token_is_refused(jp_fetch, served, jp_serverapp, judge) -> None:
    """Logged in by cookie (as a browser is), a POST without Jupyter's XSRF token is refused."""
    token = jp_serverapp.identity_provider.token
    _, _, login = await request(jp_fetch, "api", "status", headers={"Authorization": ""}, token=token)
    cookies = "; ".join(c.split(";", 1)[0] for c in login.headers.get_list("Set-Cookie"))
    assert cookies, "the token login set no cookie"
    before = Snapshot.take(served)
    code, answer, _ = await request(jp_fetch, "ryzen-nb", "quantize-notebook", method="POST",
                                    body=b'{"path": "cnn.onnx"}', headers={"Authorization": "", "Cookie": cookies})
    judge(judge_http(code, answer, 403, [("xsrf", "forbidden")], before))
    assert code == 403 and not list(served.glob("quantize_*.ipynb"))


async def test_a_model_name_never_becomes_code(jp_fetch, served, judge) -> None:
    """A file name with quotes and code in it lands in the notebook as a string, nothing else."""
    name = 'x"; import os; os.system("echo pwned") #.onnx'
    (served / name).write_bytes((served / "cnn.onnx").read_bytes())
    code, answer, _ = await request(jp_fetch, "ryzen-nb", "quantize-notebook", method="POST",
                                    body=json.dumps({"path": name}).encode())
    assert code == 200, answer
    notebook = nbformat.read(str(served / answer["path"]), as_version=4)
    setup = next(c.source for c in notebook.cells if "MODEL = " in c.source)
    tree = ast.parse(setup)
    assigned = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.targets[0].id == "MODEL"]
    safe = len(assigned) == 1 and ast.literal_eval(assigned[0].value) == name and "os.system" not in \
        "".join(ast.unparse(n) for n in tree.body if not isinstance(n, ast.Assign))
    judge(Outcome("clear" if safe else "wrong", setup))


async def test_hidden_files_are_served_when_the_server_allows_them(jp_fetch, served, jp_serverapp) -> None:
    jp_serverapp.contents_manager.allow_hidden = True
    code, answer, _ = await request(jp_fetch, "ryzen-nb", "onnx", path=".secret.onnx")
    assert code == 200 and answer["file"] == ".secret.onnx" and answer["partition"]["npu_operators"] > 0


async def test_answers_are_cached_until_the_file_changes(jp_fetch, served) -> None:
    analysis = pytest.importorskip("ryzen_nb.jupyter.analysis")
    first = (await request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="PHX"))[1]
    started = time.perf_counter()
    again = (await request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="PHX"))[1]
    assert again == first and time.perf_counter() - started < 1.0
    assert any(key[0] == str((served / "cnn.onnx").resolve()) for key in analysis._cache)
    # another model under the same name: a new analysis, not the cached answer
    onnx.save(resnet_cnn(1, blocks=(1, 1), width=8, image_size=8), str(served / "cnn.onnx"))
    changed = (await request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="PHX"))[1]
    assert changed["operators"] != first["operators"]


async def test_an_analysis_past_the_time_limit_is_stopped(jp_fetch, served, monkeypatch, judge) -> None:
    try:
        from ryzen_nb.jupyter import analysis, workers
    except ImportError:  # the code before issue 16: no time limit at all
        judge(Outcome("wrong", "no time limit"))
        return
    pool = workers.WorkerPool(1, 1)
    monkeypatch.setattr(analysis, "_pool", pool)
    monkeypatch.setattr(analysis, "TIME_LIMIT_S", 0.001)
    try:
        before = Snapshot.take(served)
        code, answer, _ = await request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="KRK")
        judge(judge_http(code, answer, 504, ["cnn.onnx", "longer than", "ryzen_nb.npu.compile"], before))
        assert code == 504 and pool.processes == []  # the worker was stopped
    finally:
        pool.close()


async def test_a_full_waiting_line_answers_busy(jp_fetch, served, monkeypatch, judge) -> None:
    try:
        from ryzen_nb.jupyter import analysis, workers
    except ImportError:  # the code before issue 16: every request waited on the event loop
        judge(Outcome("wrong", "no limit on concurrent analyses"))
        return
    pool = workers.WorkerPool(1, 0)
    monkeypatch.setattr(analysis, "_pool", pool)
    try:
        first = asyncio.ensure_future(request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="HPT"))
        for _ in range(400):  # until the first analysis holds the only worker
            if pool.pending:
                break
            await asyncio.sleep(0.05)
        code, answer, _ = await request(jp_fetch, "ryzen-nb", "onnx", path="cnn.onnx", target="STXH")
        judge(judge_http(code, answer, 503, ["busy", "try again"]))
        assert code == 503 and (await first)[0] == 200
    finally:
        pool.close()


async def test_the_server_answers_while_a_large_model_is_analysed(jp_fetch, served, judge) -> None:
    """8 concurrent viewer requests on a ~300 MB model (two targets: two analyses, the other six
    share them): /api/status keeps answering within 1 s, and no request ends in HTTP 500."""
    big_model(served / "big.onnx", 300)
    requests = [asyncio.ensure_future(request(jp_fetch, "ryzen-nb", "onnx", path="big.onnx",
                                              target=("STX", "PHX")[i % 2], timeout=300))
                for i in range(8)]
    latencies = []
    while not all(r.done() for r in requests):
        started = time.perf_counter()
        code, _, _ = await request(jp_fetch, "api", "status", timeout=300)
        latencies.append(time.perf_counter() - started)
        assert code == 200
        await asyncio.sleep(0.1)
    answers = [await r for r in requests]
    codes = [a[0] for a in answers]
    worst = max(latencies)
    print(f"/api/status: {len(latencies)} probes, worst {worst:.3f} s, median "
          f"{sorted(latencies)[len(latencies) // 2]:.3f} s; viewer answers {codes}")
    fine = worst < 1.0 and codes.count(500) == 0 and all(c == 200 for c in codes)
    judge(Outcome("clear" if fine else "wrong", f"worst /api/status {worst:.2f} s, answers {codes}"))
    assert {a[1]["partition"]["target"] for a in answers} == {"STX", "PHX"}
    assert all(a[1]["size_mb"] > 290 for a in answers)
    started = time.perf_counter()  # asked again: the cached answer, at once
    code, again, _ = await request(jp_fetch, "ryzen-nb", "onnx", path="big.onnx", target="STX")
    assert code == 200 and time.perf_counter() - started < 1.0 and again["partition"]["target"] == "STX"
