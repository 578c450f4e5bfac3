"""Every reader x every way a file it reads can be broken: the error names the file and what is
wrong with it, on every surface (API, command line, widgets).

Models (missing, empty, truncated, random bytes, text, a Git LFS pointer, a folder, a .npy or a zip
named .onnx, missing or short external data, an unsupported opset), ``--config`` files (missing, a
folder, not JSON, not UTF-8, the wrong shape, unknown names, wrong values), calibration files
(corrupt .npy/.npz/.png/.jpg) and result folders of ``evaluate``.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import ryzen_nb
from ryzen_nb import errors, npu
from ryzen_nb.quantization.bf16 import convert_bf16
from ryzen_nb.testing import random_images
from tests.badinput.harness import Snapshot, call, judge_cli, judge_exception, run_cli


def _put(root: Path, name: str, data: bytes) -> str:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / name).write_bytes(data)
    return name


def _lone_external(root: Path) -> str:
    (root / "lone").mkdir()
    shutil.copy(root / "ext.onnx", root / "lone" / "ext.onnx")
    return "lone/ext.onnx"


def _short_external(root: Path) -> str:
    (root / "short").mkdir()
    shutil.copy(root / "ext.onnx", root / "short" / "ext.onnx")
    data = (root / "ext.onnx.data").read_bytes()
    (root / "short" / "ext.onnx.data").write_bytes(data[: len(data) // 2])
    return "short/ext.onnx"


def _opset(root: Path, version: int) -> str:
    model = onnx.load(str(root / "m.onnx"))
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = version
    onnx.save(model, str(root / f"opset{version}.onnx"))
    return f"opset{version}.onnx"


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


@dataclass(frozen=True)
class Corruption:
    name: str
    make: Callable[[Path], str]  #: prepares the broken file in the workspace, returns its path
    fragments: list[Any]
    error: type[BaseException] = errors.ModelError
    quantizing_only: bool = False  #: only for readers that quantize (an opset the emulator does not mind)


MODELS = [
    Corruption("missing", lambda r: "missing.onnx", ["missing.onnx", ("does not exist", "no such")],
               errors.ModelNotFoundError),
    Corruption("empty", lambda r: _put(r, "empty.onnx", b""), ["empty.onnx"]),
    Corruption("truncated", lambda r: _put(r, "trunc.onnx", (r / "m.onnx").read_bytes()[:1500]), ["trunc.onnx"]),
    Corruption("random-bytes", lambda r: _put(r, "random.onnx", np.random.default_rng(3).bytes(4000)), ["random.onnx"]),
    Corruption("text", lambda r: _put(r, "text.onnx", b"this is not a model\n"), ["text.onnx"]),
    Corruption("lfs-pointer", lambda r: _put(r, "lfs.onnx", b"version https://git-lfs.github.com/spec/v1\noid sha256:"
                                                            + b"0" * 64 + b"\nsize 98765432\n"), ["lfs.onnx"]),
    Corruption("folder", lambda r: (r / "dir.onnx").mkdir() or "dir.onnx", ["dir.onnx", "folder"]),
    Corruption("npy-named-onnx", lambda r: _put(r, "array.onnx", _npy_bytes(np.zeros((2, 2), np.float32))),
               ["array.onnx"]),
    Corruption("zip-named-onnx", lambda r: _put(r, "ckpt.onnx", b"PK\x03\x04" + bytes(200)), ["ckpt.onnx"]),
    Corruption("external-data-missing", _lone_external, ["ext.onnx.data", "lone"]),
    Corruption("external-data-short", _short_external, ["ext.onnx", "external data"]),
    Corruption("opset-28", lambda r: _opset(r, 28), ["opset 28", "17"], quantizing_only=True),
    Corruption("opset-5", lambda r: _opset(r, 5), ["opset 5", "17"], quantizing_only=True),
]


def _partition_view(path: str) -> None:
    pytest.importorskip("ipywidgets")
    from ryzen_nb.ui import PartitionView

    PartitionView(path, target="STX")


def _config_builder(path: str) -> None:
    pytest.importorskip("ipywidgets")
    from ryzen_nb.ui import ConfigBuilder

    ConfigBuilder(path)


def _compare(path: str) -> None:
    from ryzen_nb.evaluation import compare

    compare(path, {"q": "q.onnx"}, random_images(2, size=8), targets=(), latency_runs=0, per_layer_samples=0,
            progress=False)


@dataclass(frozen=True)
class Reader:
    name: str
    act: Callable[[str], Any]
    cli: str | None = None
    quantizes: bool = False


MODEL_READERS = [
    Reader("api-quantize", lambda p: call(lambda: ryzen_nb.quantize(p, "out.onnx", "XINT8", "calib", progress=False)),
           quantizes=True),
    Reader("api-convert-bf16", lambda p: call(lambda: convert_bf16(p, "out.onnx")), quantizes=True),
    Reader("api-compile", lambda p: call(lambda: npu.compile(p, "STX"))),
    Reader("api-compare", lambda p: call(lambda: _compare(p))),
    Reader("cli-quantize", lambda p: run_cli(["quantize", p, "out.onnx", "--calib-data", "calib", "--quiet"]),
           cli="quantize", quantizes=True),
    Reader("cli-convert-bf16", lambda p: run_cli(["convert-bf16", "--input", p, "--output", "out.onnx"]),
           cli="convert-bf16", quantizes=True),
    Reader("cli-emulate", lambda p: run_cli(["emulate", p]), cli="emulate"),
    Reader("widget-partition-view", lambda p: call(lambda: _partition_view(p))),
    Reader("widget-config-builder", lambda p: call(lambda: _config_builder(p))),
]

MODEL_CASES = [pytest.param(r, c, id=f"{r.name}-{c.name}") for r in MODEL_READERS for c in MODELS
               if r.quantizes or not c.quantizing_only]


@pytest.mark.parametrize(("reader", "corruption"), MODEL_CASES)
def test_a_broken_model_is_named(reader: Reader, corruption: Corruption, ws: Path, judge) -> None:
    path = corruption.make(ws)
    before = Snapshot.take(ws)
    result = reader.act(path)
    if reader.cli:
        judge(judge_cli(result, corruption.fragments, before, reader.cli))
    else:
        judge(judge_exception(result, corruption.error, corruption.fragments, before))
        assert isinstance(result, corruption.error)


# -- --config files -------------------------------------------------------------------------------------
CONFIGS = [
    ("missing", None, ["nope.json", "does not exist"]),
    ("a-folder", "dir", ["cfgdir", "folder"]),
    ("empty", b"", ["empty.json", "JSON"]),
    ("not-json", b"{,}", ["bad.json", "JSON", "line 1"]),
    ("truncated", b'{"global_quant_config": {"calibrate_method": "MinMax",', ["trunc.json", "JSON"]),
    ("a-list", b"[1, 2]", ["list.json", "object"]),
    ("wrong-top-key", b'{"quant_config": {}}', ["keys.json", "global_quant_config"]),
    ("unknown-field", b'{"global_quant_config": {"calibrate_methd": "MinMax"}}',
     ["field.json", "calibrate_methd", "calibrate_method"]),
    ("unknown-option", b'{"global_quant_config": {"extra_options": {"ActivationSymetric": true}}}',
     ["option.json", "ActivationSymetric", "ActivationSymmetric"]),
    ("wrong-value", b'{"global_quant_config": {"calibrate_method": 5}}', ["value.json", "5"]),
    ("wrong-value-type", b'{"global_quant_config": {"nodes_to_exclude": 7}}', ["type.json", "nodes_to_exclude"]),
    ("not-utf8", b"\xff\xfe{\x00}\x00", ["binary.json", "UTF-8"]),
    ("byte-order-mark", b'\xef\xbb\xbf{"global_quant_config": {}}', ["bom.json"]),
]
_CONFIG_FILES = {"a-folder": "cfgdir", "empty": "empty.json", "not-json": "bad.json", "truncated": "trunc.json",
                 "a-list": "list.json", "wrong-top-key": "keys.json", "unknown-field": "field.json",
                 "unknown-option": "option.json", "wrong-value": "value.json", "wrong-value-type": "type.json",
                 "not-utf8": "binary.json", "byte-order-mark": "bom.json", "missing": "nope.json"}


@pytest.mark.parametrize(("name", "data", "fragments"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_a_broken_config_file_is_named(name: str, data: Any, fragments: list[Any], ws: Path, judge) -> None:
    file = _CONFIG_FILES[name]
    if data == "dir":
        (ws / file).mkdir()
    elif data is not None:
        (ws / file).write_bytes(data)
    before = Snapshot.take(ws)
    result = run_cli(["quantize", "m.onnx", "out.onnx", "--config", file, "--calib-data", "calib", "--quiet"])
    judge(judge_cli(result, fragments, before, "quantize"))


# -- calibration files ----------------------------------------------------------------------------------
def _truncated_npy() -> bytes:
    data = _npy_bytes(np.zeros((1, 3, 8, 8), np.float32))
    return data[: len(data) // 2]


def _png() -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (8, 8), (10, 20, 30)).save(buffer, format="PNG")
    return buffer.getvalue()


CALIBRATION = [
    ("garbage-npy", "0.npy", b"this is not an array\n"),
    ("empty-npy", "0.npy", b""),
    ("truncated-npy", "0.npy", _truncated_npy()),
    ("object-npy", "0.npy", _npy_bytes(np.array([{"a": 1}], dtype=object))),
    ("garbage-npz", "0.npz", b"PK\x03\x04garbage"),
    ("garbage-png", "0.png", b"\x89PNG\r\n\x1a\nnot really"),
    ("truncated-png", "0.png", _png()[:40]),
    ("empty-jpg", "0.jpg", b""),
]
CALIBRATION_READERS = [
    ("api-quantize", None, lambda: call(lambda: ryzen_nb.quantize("m.onnx", "out.onnx", "XINT8", "bad",
                                                                  progress=False))),
    ("cli-quantize", "quantize", lambda: run_cli(["quantize", "m.onnx", "out.onnx", "--calib-data", "bad", "--quiet"])),
    ("cli-emulate-data", "emulate", lambda: run_cli(["emulate", "q.onnx", "--data", "bad", "--limit", "2"])),
]
CALIBRATION_CASES = [pytest.param(r, c, id=f"{r[0]}-{c[0]}") for r in CALIBRATION_READERS for c in CALIBRATION]


@pytest.mark.parametrize(("reader", "corruption"), CALIBRATION_CASES)
def test_a_broken_calibration_file_is_named(reader: Any, corruption: Any, ws: Path, judge) -> None:
    _, command, act = reader
    _, name, data = corruption
    (ws / "bad").mkdir()
    (ws / "bad" / name).write_bytes(data)
    before = Snapshot.take(ws)
    result = act()
    fragments = [name]
    if command:
        judge(judge_cli(result, fragments, before, command))
    else:
        judge(judge_exception(result, errors.CalibrationDataError, fragments, before))


# -- evaluate's result folders ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Results:
    name: str
    quantized: dict[str, bytes] = field(default_factory=dict)
    baseline: dict[str, bytes] = field(default_factory=dict)
    folders: tuple[str, str] = ("base", "quant")
    fragments: tuple[Any, ...] = ()


_A = _npy_bytes(np.arange(12, dtype=np.float32).reshape(3, 4))
RESULTS = [
    Results("garbage-npy", {"a.npy": b"garbage"}, {"a.npy": _A}, fragments=("a.npy",)),
    Results("object-npy", {"a.npy": _npy_bytes(np.array([None], dtype=object))}, {"a.npy": _A}, fragments=("a.npy",)),
    Results("garbage-png", {"a.png": b"\x89PNG\r\n\x1a\nno"}, {"a.png": _png()}, fragments=("a.png",)),
    Results("shape-mismatch", {"a.npy": _npy_bytes(np.zeros((2, 2), np.float32))}, {"a.npy": _A},
            fragments=("a.npy", "shape")),
    Results("missing-folder", {}, {"a.npy": _A}, folders=("base", "nope"), fragments=("nope", "does not exist")),
    Results("a-file", {}, {"a.npy": _A}, folders=("base", "notes.txt"), fragments=("notes.txt",)),
    Results("nothing-in-common", {"b.npy": _A}, {"a.npy": _A}, fragments=("a.npy", "b.npy")),
    Results("empty-folder", {}, {"a.npy": _A}, folders=("base", "outdir"), fragments=("outdir",)),
]
EVALUATE_CASES = [pytest.param(surface, r, id=f"{surface}-{r.name}") for surface in ("api", "cli") for r in RESULTS]


@pytest.mark.parametrize(("surface", "results"), EVALUATE_CASES)
def test_broken_result_folders_are_named(surface: str, results: Results, ws: Path, judge) -> None:
    from ryzen_nb.evaluation.folders import evaluate_folders

    for folder, files in (("base", results.baseline), ("quant", results.quantized)):
        (ws / folder).mkdir()
        for name, data in files.items():
            (ws / folder / name).write_bytes(data)
    before = Snapshot.take(ws)
    base, quant = results.folders
    if surface == "cli":
        judge(judge_cli(run_cli(["evaluate", base, quant]), list(results.fragments), before, "evaluate"))
    else:
        error = call(lambda: evaluate_folders(base, quant))
        judge(judge_exception(error, errors.RyzenNBError, list(results.fragments), before))
