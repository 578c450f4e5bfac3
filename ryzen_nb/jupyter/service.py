"""What the JupyterLab extension's endpoints do, as plain functions (the handlers only translate
HTTP): list and copy the tutorials, summarise an ONNX file with its NPU partition, write a
"quantize this model" notebook, and hand the front end the NPU facts (precisions with their labels
and colours, devices, targets: :func:`ryzen_nb.spec.facts`) so it types none of them.

Every path a caller gives is relative to the server's root folder and must stay inside it (after
symbolic links are followed); hidden files and files in hidden folders are refused unless the
server allows them (``ContentsManager.allow_hidden``), as Jupyter's own contents API does. The
viewer's summary (:func:`summarize`) is the expensive part: the server runs it in a worker process
(:mod:`ryzen_nb.jupyter.analysis`), and refuses a model above :data:`MAX_MODEL_MB` — its external
data counted — before loading it. Writes go through the package's output guard
(:func:`ryzen_nb.graph.io.write_atomic`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import external_data_helper

from ryzen_nb import npu, spec
from ryzen_nb.errors import RyzenNBError, closest_first
from ryzen_nb.graph.io import Input, external_locations, model_inputs, write_atomic
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization import get_default_config
from ryzen_nb.spec.targets import DEFAULT_TARGET, get_target

__all__ = ["ServiceError", "Tutorial", "copy_tutorial", "facts", "onnx_summary", "quantize_notebook", "tutorials",
           "locate_model", "check_request", "summarize", "analyse_job", "AS_IS", "PRECISION_MENU", "MAX_MODEL_MB"]

#: the viewer's precision menu entry that compiles the file as it is
AS_IS = "as-is"
#: the viewer's precision menu for an FP32 model: the file as it is, or quantized in memory with one
#: of these presets (random calibration data: the partition depends on the operators and their
#: precision, not on the values). An already quantized model offers only AS_IS. The one definition
#: of the menu: the front end shows what the summary's "precisions" lists.
PRECISION_MENU = (AS_IS, "XINT8", "A8W8", "A16W8", "BF16")
#: larger files are refused: the server would hold them in memory to compile them
MAX_MODEL_MB = 512
_REPO_TUTORIALS = Path(__file__).resolve().parents[2] / "notebooks"


class ServiceError(RyzenNBError, ValueError):
    """A request that cannot be served; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# -- tutorials ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tutorial:
    name: str  #: file stem, e.g. "01_getting_started"
    number: int
    title: str
    teaches: str
    path: Path

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("path")
        return d


def _tutorial_folder() -> Path:
    """``ryzen_nb/_tutorials`` in a wheel (force-included from ``notebooks/``), else the checkout's folder."""
    packaged = Path(str(resources.files("ryzen_nb"))) / "_tutorials"
    if (packaged / "README.md").is_file():
        return packaged
    if (_REPO_TUTORIALS / "README.md").is_file():
        return _REPO_TUTORIALS
    raise ServiceError("The tutorials are missing from this installation of ryzen-nb; reinstall it.", 500)


def tutorials() -> list[Tutorial]:
    """The tutorials, in order, with their titles and what each teaches (from the index README)."""
    folder = _tutorial_folder()
    rows = re.findall(r"^\|\s*(\d+)\s*\|\s*\[([^\]]+)\]\(([^)]+\.ipynb)\)\s*\|\s*(.+?)\s*\|\s*$",
                      (folder / "README.md").read_text(encoding="utf-8"), flags=re.M)
    found = []
    for number, title, file, teaches in rows:
        path = folder / file
        if path.is_file():
            found.append(Tutorial(path.stem, int(number), title, teaches, path))
    return found


def _inside(root: Path, relative: str, what: str, allow_hidden: bool = True) -> Path:
    """``root / relative``, refusing anything that leaves ``root`` (symbolic links followed) and,
    unless ``allow_hidden``, anything hidden on the way there."""
    root = root.resolve()
    target = (root / relative.lstrip("/")).resolve()
    if target != root and root not in target.parents:
        raise ServiceError(f"The {what} {relative!r} is outside the server's folder.", 403)
    if not allow_hidden:
        _refuse_hidden(root, target, relative, what)
    return target


def _refuse_hidden(root: Path, target: Path, relative: str, what: str) -> None:
    """Jupyter's rule: a file whose name, or a folder on whose path, starts with '.' is not served
    unless the server allows hidden files (404, as the contents API answers)."""
    if any(part.startswith(".") for part in target.relative_to(root).parts):
        raise ServiceError(f"The {what} {relative!r} is hidden (it or a folder on its path starts with '.'); this "
                           "Jupyter server does not serve hidden files (ContentsManager.allow_hidden is False).", 404)


def copy_tutorial(name: str, root: Path, directory: str = "", allow_hidden: bool = True) -> dict[str, str]:
    """Copy tutorial ``name`` into ``directory`` (relative to ``root``). A copy already there is never
    overwritten: the same file is simply opened again, a changed one is kept and opened as it is.

    Returns ``{"path": <relative path to open>, "status": "created" | "unchanged" | "kept-your-copy"}``."""
    by_name = {t.name: t for t in tutorials()}
    if name not in by_name:
        raise ServiceError(f"There is no tutorial {name!r}; the tutorials are "
                           f"{', '.join(closest_first(name, list(by_name)))}.", 404)
    folder = _inside(root, directory, "folder", allow_hidden)
    if not folder.is_dir():
        raise ServiceError(f"The folder {directory!r} does not exist.", 404)
    source = by_name[name].path
    dest = folder / source.name
    original = source.read_bytes()
    if dest.exists():
        status = "unchanged" if hashlib.sha256(dest.read_bytes()).digest() == hashlib.sha256(original).digest() \
            else "kept-your-copy"
    else:
        write_atomic(dest, original, protect=[Input("tutorial", source)], what="copy")
        status = "created"
    return {"path": dest.relative_to(root.resolve()).as_posix(), "status": status}


# -- NPU facts ----------------------------------------------------------------------------------------------
def facts() -> dict[str, Any]:
    """The NPU facts every view shows (:func:`ryzen_nb.spec.facts`): precisions with their labels,
    colours and targets, the device colours, the targets with their labels, the default target."""
    return spec.facts()


# -- ONNX viewer --------------------------------------------------------------------------------------------
def _dims(value_info: onnx.ValueInfoProto) -> list[int | str]:
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
            for d in value_info.type.tensor_type.shape.dim]


def _io(values: Any, inits: set[str]) -> list[dict[str, Any]]:
    return [{"name": v.name, "shape": _dims(v),
             "dtype": str(np.dtype(onnx.helper.tensor_dtype_to_np_dtype(v.type.tensor_type.elem_type)))
             if v.type.tensor_type.elem_type else "?"} for v in values if v.name not in inits]


def _is_quantized(model: onnx.ModelProto) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") or n.domain == "ryzen_nb" for n in model.graph.node)


def check_request(target: str, precision: str) -> None:
    """A viewer request's target and precision, checked before any work (400 with the choices)."""
    try:
        get_target(target)
    except RyzenNBError as exc:
        raise ServiceError(str(exc)) from None
    if precision not in PRECISION_MENU:
        raise ServiceError(f"Unknown precision {precision!r}; choose one of {list(PRECISION_MENU)}.")


def locate_model(root: Path, path: str, allow_hidden: bool = True) -> Path:
    """The model file ``path`` names, checked without reading it: inside ``root``, visible, a file,
    and not above :data:`MAX_MODEL_MB` on its own (its external data is counted when it is read)."""
    if not path:
        raise ServiceError("Give the model's path (?path=folder/model.onnx).")
    file = _inside(root, path, "model", allow_hidden)
    if not file.exists():
        raise ServiceError(f"There is no file {path!r}.", 404)
    if not file.is_file():
        raise ServiceError(f"{path!r} is a folder, not an ONNX file.", 400)
    _refuse_too_large(file.name, file.stat().st_size)
    return file


def _refuse_too_large(name: str, size: int, external: bool = False) -> None:
    if size > MAX_MODEL_MB * 2**20:
        with_data = " with its external data" if external else ""
        raise ServiceError(f"{name} is {size / 2**20:.0f} MB{with_data}; the viewer opens models up to {MAX_MODEL_MB} MB "
                           "(use ryzen_nb.npu.compile in a notebook for larger ones).", 413)


def _load(file: Path, root: Path, allow_hidden: bool) -> tuple[onnx.ModelProto, int, list[Path]]:
    """The model with its weights, its size with the external data, and the external-data files.
    The graph is read first and the external data counted before any of it is loaded."""
    try:
        model = onnx.load(str(file), load_external_data=False)
    except Exception as exc:  # noqa: BLE001 - protobuf raises several types for a file that is not ONNX
        raise ServiceError(f"{file.name} is not an ONNX model ({type(exc).__name__}: {str(exc)[:200]}).", 415) from exc
    size = file.stat().st_size
    extra = []
    top = root.resolve()
    for location in external_locations(model):
        data = (file.parent / location).resolve()
        if top not in data.parents:  # a location may be absolute or climb out with '..'
            raise ServiceError(f"{file.name} keeps its weights in {location!r}, outside the server's folder; the "
                               "viewer reads nothing there.", 403)
        if not allow_hidden:
            _refuse_hidden(top, data, location, "external data file")
        if not data.is_file():
            raise ServiceError(f"{file.name} keeps its weights in {location!r}, which is missing; copy it next to "
                               f"{file.name}.", 404)
        extra.append(data)
        size += data.stat().st_size
    _refuse_too_large(file.name, size, external=bool(extra))
    if extra:
        try:
            external_data_helper.load_external_data_for_model(model, str(file.parent))
        except Exception as exc:  # noqa: BLE001 - onnx raises several types for a short or unreadable file
            raise ServiceError(f"Could not read the external data of {file.name} ({type(exc).__name__}: "
                               f"{str(exc)[:200]}).", 415) from exc
    return model, size, extra


def onnx_summary(root: Path, path: str, target: str = DEFAULT_TARGET, precision: str = AS_IS,
                 allow_hidden: bool = True) -> dict[str, Any]:
    """:func:`summarize` for ``path`` relative to ``root``, in this process (the server runs it in a
    worker: :mod:`ryzen_nb.jupyter.analysis`)."""
    check_request(target, precision)
    return summarize(locate_model(root, path, allow_hidden), root, target, precision, allow_hidden)[0]


def analyse_job(file: str, root: str, target: str, precision: str, max_mb: float,
                allow_hidden: bool) -> tuple[Any, ...]:
    """:func:`summarize` in a worker process: ``("ok", summary, files)`` with the files read and
    their (mtime, size) for the server's cache, or ``("error", status, message)``. ``max_mb`` is the
    server's :data:`MAX_MODEL_MB` (a worker has its own copy of this module)."""
    global MAX_MODEL_MB
    MAX_MODEL_MB = max_mb
    try:
        summary, files = summarize(Path(file), Path(root), target, precision, allow_hidden)
    except ServiceError as exc:
        return "error", exc.status, str(exc)
    except RyzenNBError as exc:
        return "error", 400, f"{type(exc).__name__}: {exc}"
    except MemoryError:
        return "error", 507, (f"The server ran out of memory analysing {Path(file).name}; open it with "
                              "ryzen_nb.npu.compile in a notebook.")
    stamps = [(str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files]
    return "ok", summary, stamps


def summarize(file: Path, root: Path, target: str = DEFAULT_TARGET, precision: str = AS_IS,
              allow_hidden: bool = True) -> tuple[dict[str, Any], list[Path]]:
    """The file's summary and, for ``target`` and ``precision`` (an entry of the menu the answer's
    ``precisions`` lists), its NPU partition and latency estimate; and the files read (the model
    and its external data). The front end labels and colours them with :func:`facts`.

    A model with dynamic input dimensions gets its summary and, instead of a partition, the reason
    (``partition_error``): the NPU compiles static shapes only."""
    model, size, extra = _load(file, root, allow_hidden)
    size_mb = size / 2**20
    if not model.graph.node:
        raise ServiceError(f"{file.name} is not an ONNX model with a graph (no operators).", 415)
    graph = model.graph
    inits = {t.name for t in graph.initializer}
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    ops = Counter((f"{n.domain}:" if n.domain and n.domain != "ai.onnx" else "") + n.op_type for n in graph.node)
    inputs = _io(graph.input, inits)
    quantized = _is_quantized(model)
    summary: dict[str, Any] = {
        "file": file.name, "size_mb": round(size_mb, 3), "opset": opset, "ir_version": model.ir_version,
        "producer": " ".join(x for x in (model.producer_name, model.producer_version) if x),
        "inputs": inputs, "outputs": _io(graph.output, set()),
        "operators": len(graph.node), "op_histogram": dict(ops.most_common()),
        "parameters": int(sum(int(np.prod(t.dims)) if t.dims else 1 for t in graph.initializer)),
        "quantized": quantized, "precisions": [AS_IS] if quantized else list(PRECISION_MENU),
        "target": target, "precision": precision, "partition": None, "partition_error": None,
    }
    dynamic = [f"{i['name']} {i['shape']}" for i in inputs if any(not isinstance(d, int) or d <= 0 for d in i["shape"])]
    if dynamic:
        summary["partition_error"] = (f"Dynamic input dimensions ({'; '.join(dynamic)}): the NPU compiles static "
                                      "shapes only. Fix them when quantizing: ryzen_nb.quantize(..., input_shapes="
                                      "{name: [1, 3, 224, 224]}).")
        return summary, [file, *extra]
    if precision not in summary["precisions"]:
        raise ServiceError(f"Precision {precision!r} is not available for {file.name}; choose one of "
                           f"{summary['precisions']}" + (" (the model is already quantized)." if quantized else "."))
    try:
        summary["partition"] = _partition(model, target, precision)
    except RyzenNBError as exc:
        summary["partition_error"] = f"{type(exc).__name__}: {exc}"
    return summary, [file, *extra]


def _partition(model: onnx.ModelProto, target: str, precision: str) -> dict[str, Any]:
    if precision != AS_IS:
        qc = get_default_config(precision)
        qc.extra_options["UseRandomData"] = True
        model = quantize(model, None, qc, limit=2, progress=False).model
    program = npu.compile(model, target)
    estimate = npu.estimate_latency(program, target)
    # inputs and outputs are the graph view's edges ("" marks an omitted optional input: no edge)
    nodes = [{"name": n.name, "op": n.op_type, "device": n.device, "precision": n.precision, "reason": n.reason,
              "subgraph": n.subgraph, "quantizer": bool(n.quantizer), "inputs": [t for t in n.inputs if t],
              "outputs": [t for t in n.outputs if t]} for n in program.nodes]
    return {
        "target": program.target.name, "ep_log": program.ep_log(), "nodes": nodes,
        # counted as the EP log counts them (every node, quantizers included): NPUProgram.npu_share
        "npu_operators": program.npu_operators, "cpu_operators": program.cpu_operators,
        "npu_share": round(100.0 * program.npu_share, 2),  # percent with two decimals, as the EP log prints it
        "npu_subgraphs": len(program.subgraphs), "precisions": program.precisions,
        "cpu_reasons": json.loads(program.cpu_reasons().to_json(orient="records")),
        "latency_ms": round(estimate.total_ms, 4),
        "latency_breakdown_ms": {k: round(v, 4) for k, v in estimate.breakdown_ms.items()},
        "latency_note": "an estimate of ryzen_nb.npu's roofline model with named assumptions, not a measurement",
    }


# -- "Quantize with ryzen-nb..." ---------------------------------------------------------------------------
def quantize_notebook(root: Path, path: str, allow_hidden: bool = True) -> dict[str, str]:
    """Write a notebook beside the ONNX file ``path`` that opens the config builder and the
    calibration wizard for it, then quantizes, emulates and compares; returns ``{"path": ...}``."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

    file = _inside(root, path, "model", allow_hidden)
    if not file.is_file() or file.suffix.lower() != ".onnx":
        raise ServiceError(f"{path!r} is not an .onnx file.", 404 if not file.exists() else 400)
    stem = file.stem
    dest = file.with_name(f"quantize_{stem}.ipynb")
    k = 1
    while dest.exists():  # never write over a notebook of the user
        dest = file.with_name(f"quantize_{stem}-{k}.ipynb")
        k += 1
    model, out = json.dumps(file.name), json.dumps(f"{stem}_quantized.onnx")
    cells = [
        new_markdown_cell(f"# Quantize `{file.name}` with ryzen-nb\n\n"
                          "1. pick a preset and settings in the **config builder**;\n"
                          "2. build calibration data in the **calibration wizard** (keep a held-out split);\n"
                          "3. quantize, see what the NPU would run, and compare with FP32 on the held-out data.\n\n"
                          "Each widget shows the equivalent Python code. *Run All* works before you pick any data: "
                          "random samples shaped like the model's inputs stand in for it, and the notebook says so. "
                          "Numbers measured on noise mean nothing: pick your data in the wizard, then run the cells "
                          "below it again."),
        new_code_cell("import ryzen_nb\nfrom ryzen_nb.evaluation import compare\n"
                      "from ryzen_nb.ui import CalibrationWizard, ConfigBuilder, PartitionView\n\n"
                      f"MODEL = {model}"),
        new_code_cell('builder = ConfigBuilder(MODEL, preset="XINT8")\nbuilder'),
        new_code_cell("wizard = CalibrationWizard(MODEL)\nwizard"),
        # Run All must not end in a traceback on a model the wizard has no data for yet (no folder chosen)
        new_code_cell(
            "if wizard.data is None:  # no data chosen in the wizard yet: random samples stand in, so the cells below run\n"
            "    from IPython.display import HTML, display\n"
            "    from ryzen_nb.calibration.readers import RandomReader\n\n"
            "    random_stand_in = list(RandomReader(wizard.target.specs, samples=32))\n"
            '    wizard.set_data(random_stand_in, name="random_stand_in")\n'
            "    wizard.calibration_size.value = wizard.evaluation_size.value = 16\n"
            "    display(HTML(\"<p style='color:#b00020'><b>Random stand-in data.</b> The wizard had no calibration \"\n"
            "                 \"data, so the cells below quantize and compare on random samples: their numbers mean \"\n"
            "                 \"nothing. Pick your data in the wizard (step 1, Source), then run the cells below \"\n"
            "                 \"again.</p>\"))"),
        new_code_cell(f"summary = ryzen_nb.quantize(MODEL, {out}, builder.config, wizard.reader())\nsummary"),
        new_code_cell(f'PartitionView(summary.output_path, target="{DEFAULT_TARGET}")'),
        new_code_cell('feeds, labels = wizard.evaluation()\nresult = compare(MODEL, {"quantized": summary}, feeds, '
                      "labels=labels)\nryzen_nb.ui.dashboard(result)"),
    ]
    notebook = new_notebook(cells=cells, metadata={"kernelspec": {"display_name": "Python 3", "language": "python",
                                                                  "name": "python3"}})
    write_atomic(dest, nbformat.writes(notebook), protect=model_inputs(file, "model"), what="notebook")
    return {"path": dest.relative_to(root.resolve()).as_posix()}
