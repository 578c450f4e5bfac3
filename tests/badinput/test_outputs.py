"""Every writer x every way an output can point at something the same call reads.

Writers: ``ryzen_nb.quantize``, ``QuantizationRun.finish``, ``convert_bf16``, ``save_model``,
``NPUProgram.write_report``, ``Comparison.to_html``; the command line's ``quantize`` (with and
without ``--config``), ``convert-bf16``, ``emulate --report`` (with and without ``--data``); the
comparison dashboard's export. Each case must be refused with an error naming both paths, leave
every input byte for byte as it was, and leave no file behind.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.graph.io import load_model, save_model
from ryzen_nb.quantization.bf16 import convert_bf16
from ryzen_nb.quantization.run import QuantizationRun
from ryzen_nb.testing import random_images
from tests.badinput.conftest import make_workspace
from tests.badinput.harness import OutputPathError, Snapshot, call, judge_cli, judge_exception, run_cli


def _compare(model: str) -> Any:
    from ryzen_nb.evaluation import compare

    return compare(model, {"q": "q.onnx"}, random_images(2, size=8), targets=(), latency_runs=0, per_layer_samples=0,
                   progress=False)


def _finish(model: str, out: str) -> None:
    run = QuantizationRun.prepare(model, "XINT8", "calib", progress=False)
    run.start()
    run.finish(out)


@dataclass(frozen=True)
class Writer:
    name: str
    act: Callable[[str, str], Any]  #: (model, output) -> an exception or None (API), a CliResult (CLI)
    cli: str | None = None  #: the command, for the command line's writers
    reads_calib: bool = False
    reads_config: bool = False


WRITERS = [
    Writer("api-quantize", lambda m, o: call(lambda: ryzen_nb.quantize(m, o, "XINT8", "calib", progress=False)),
           reads_calib=True),
    Writer("api-run-finish", lambda m, o: call(lambda: _finish(m, o)), reads_calib=True),
    Writer("api-convert-bf16", lambda m, o: call(lambda: convert_bf16(m, o))),
    Writer("api-save-model", lambda m, o: call(lambda: save_model(load_model(m), o, protect=Path(m)))),
    Writer("api-write-report", lambda m, o: call(lambda: npu.compile(m, "STX").write_report(o))),
    Writer("api-to-html", lambda m, o: call(lambda: _compare(m).to_html(o))),
    Writer("cli-quantize", lambda m, o: run_cli(["quantize", m, o, "--calib-data", "calib", "--quiet"]),
           cli="quantize", reads_calib=True),
    Writer("cli-quantize-config", lambda m, o: run_cli(["quantize", m, o, "--config", "cfg.json", "--calib-data",
                                                        "calib", "--quiet"]),
           cli="quantize", reads_calib=True, reads_config=True),
    Writer("cli-convert-bf16", lambda m, o: run_cli(["convert-bf16", "--input", m, "--output", o]), cli="convert-bf16"),
    Writer("cli-emulate-report", lambda m, o: run_cli(["emulate", m, "--report", o]), cli="emulate"),
    Writer("cli-emulate-report-data", lambda m, o: run_cli(["emulate", m, "--data", "calib", "--limit", "2",
                                                            "--report", o]),
           cli="emulate", reads_calib=True),
]


@dataclass(frozen=True)
class Alias:
    """One way an output path can point at an input: ``make(root)`` prepares the workspace and
    returns (model, output, message fragments)."""

    name: str
    make: Callable[[Path], tuple[str, str, list[Any]]]
    needs: str = ""  #: "calib" / "config": only for writers that read it


REFUSE = ("refus", "is the input", "over the input", "would be lost")
NOT_FOLDER = ("not a folder", "not a directory")


def _linked(name: str, target: str, model: str, hard: bool = False,
            out: str | None = None) -> Callable[[Path], tuple[str, str, list[Any]]]:
    """An alias made of a link ``name`` -> ``target`` (symbolic, or hard): the output is the link
    (or ``out`` through it), the message must name it and the input it reaches."""

    def make(root: Path) -> tuple[str, str, list[Any]]:
        if hard:
            os.link(root / target, root / name)
        else:
            os.symlink(target, root / name)
        return model, out or name, [out or name, target if target != "." else model, REFUSE]

    return make


ALIASES = [
    Alias("the-model", lambda r: ("m.onnx", "m.onnx", ["m.onnx", REFUSE])),
    Alias("model-absolute", lambda r: ("m.onnx", str(r / "m.onnx"), ["m.onnx", REFUSE])),
    Alias("model-dotdot", lambda r: ("m.onnx", "outdir/../m.onnx", ["outdir/../m.onnx", REFUSE])),
    Alias("model-symlink", _linked("link.onnx", "m.onnx", "m.onnx")),
    Alias("model-hardlink", _linked("hard.onnx", "m.onnx", "m.onnx", hard=True)),
    Alias("model-through-linked-folder", _linked("here", ".", "m.onnx", out="here/m.onnx")),
    Alias("external-data", lambda r: ("ext.onnx", "ext.onnx.data", ["ext.onnx.data", REFUSE])),
    Alias("external-data-symlink", _linked("weights.bin", "ext.onnx.data", "ext.onnx")),
    Alias("external-model", lambda r: ("ext.onnx", "ext.onnx", ["ext.onnx", REFUSE])),
    Alias("calibration-file", lambda r: ("m.onnx", "calib/0.npy", ["calib/0.npy", "calib"]), needs="calib"),
    Alias("new-file-in-calibration", lambda r: ("m.onnx", "calib/extra.npy", ["calib/extra.npy", "calib"]),
          needs="calib"),
    Alias("calibration-folder", lambda r: ("m.onnx", "calib", ["calib", "folder"])),
    Alias("config-file", lambda r: ("m.onnx", "cfg.json", ["cfg.json", REFUSE]), needs="config"),
    Alias("a-folder", lambda r: ("m.onnx", "outdir", ["outdir", "folder"])),
    Alias("a-folder-slash", lambda r: ("m.onnx", "outdir/", ["outdir", "folder"])),
    Alias("under-the-model", lambda r: ("m.onnx", "m.onnx/out.json", ["m.onnx/out.json", NOT_FOLDER])),
    Alias("under-a-file", lambda r: ("m.onnx", "notes.txt/sub/out.json", ["notes.txt", NOT_FOLDER])),
    Alias("empty-path", lambda r: ("m.onnx", "", ["empty"])),
]


def _applies(writer: Writer, alias: Alias) -> bool:
    return {"": True, "calib": writer.reads_calib, "config": writer.reads_config}[alias.needs]


CASES = [pytest.param(w, a, id=f"{w.name}-{a.name}") for w in WRITERS for a in ALIASES if _applies(w, a)]


@pytest.mark.parametrize(("writer", "alias"), CASES)
def test_an_output_never_replaces_an_input(writer: Writer, alias: Alias, ws: Path, judge) -> None:
    model, out, fragments = alias.make(ws)
    before = Snapshot.take(ws)
    result = writer.act(model, out)
    if writer.cli:
        judge(judge_cli(result, fragments, before, writer.cli))
    else:
        judge(judge_exception(result, OutputPathError, fragments, before))
        assert isinstance(result, OutputPathError)


# -- the comparison dashboard's export (a widget: the error shows in the widget) --------------------------
@pytest.fixture(scope="module")
def dashboard(tmp_path_factory, model_bytes, quantized_bytes):
    pytest.importorskip("ipywidgets")
    from ryzen_nb.ui import dashboard as make_dashboard

    root = make_workspace(tmp_path_factory.mktemp("dash") / "ws", model_bytes, quantized_bytes)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        board = make_dashboard(_compare("m.onnx"))
    finally:
        os.chdir(cwd)
    return root, board


WIDGET_ALIASES = [pytest.param(a, id=a.name) for a in ALIASES if a.needs == "" and not a.name.startswith("external")]


@pytest.mark.parametrize("alias", WIDGET_ALIASES)
def test_the_dashboard_never_exports_over_a_compared_model(alias: Alias, dashboard, model_bytes, quantized_bytes,
                                                           tmp_path, monkeypatch, judge) -> None:
    root, board = dashboard
    # a fresh copy of the workspace the dashboard's models came from (an earlier case may have changed it)
    for child in list(root.iterdir()):
        if child.is_symlink() or child.is_file():
            child.unlink()
        else:
            shutil.rmtree(child)
    make_workspace(root, model_bytes, quantized_bytes)
    monkeypatch.chdir(root)
    _, out, fragments = alias.make(root)
    before = Snapshot.take(root)
    board.export_path.value = out
    board.export()
    error = board.errors.last_error
    judge(judge_exception(error, OutputPathError, fragments, before))
    assert isinstance(error, OutputPathError) and "rnb-error" in board.errors.value
