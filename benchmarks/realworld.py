"""Real-world corpus benchmark: models as public packages ship them, quantized by ryzen-nb, onnxruntime
and AMD Quark, each scored against FP32 on realistic inputs (``ryzen_nb.zoo.realworld``).

Per model x preset x tool:

* ``cosine``   cosine similarity to FP32 per output, over all evaluation samples (each output flattened
               and concatenated); the weakest output's is shown
* ``task``     the model's decoded answers against FP32's (``CorpusEntry.metric``: box F1, text-line or
               captcha agreement, text-map IoU, top-1 or VAD frame agreement); 1.0 = the same answers
* ``quant_s``  wall time of the quantization (load, calibration, quantization, save; not the import)
* ``size_mb``  the quantized model's size

ryzen-nb runs in this process (as a user calls it); onnxruntime's ``quantize_static`` and Quark run in
fresh subprocesses through ``benchmarks/quantize.py``'s workers: onnxruntime only where it has the
preset (A8W8, A16W8), Quark only when an interpreter with ``amd-quark`` is named (``--quark-python`` or
``RYZEN_NB_QUARK_PYTHON``; it is never installed by ryzen-nb). Every quantized model runs in plain
onnxruntime (Quark's custom operators, when its output has them, with its custom-op library).

``RECOVERY`` holds the second rows: where a preset's defaults lose the task, the option that wins it
back (an exclusion, per-channel weights, 16-bit activations), measured the same way.

A cell that fails at any step (the tool, loading or running its model, an output shape it changed) records a
short error and the run goes on; a cell whose model has no quantizing operator at all (no Q/DQ, integer
operator, Cast to bfloat16 or custom quantize op, subgraphs included) says "nothing quantized" beside its
scores. onnxruntime's ``quant_pre_process`` is retried without symbolic shape inference, then skipped, when it
fails (the cell says which). Each worker's address space is capped (``--worker-memory-gb``, default 8; a
tool over it is "out of memory (cap N GB)"). With ``--quark-python`` a second table puts ryzen-nb's
cosine / task beside Quark's for each preset.

    python -m benchmarks.realworld [--models nudenet_320n,ppocr_det] [--presets XINT8,BF16]
                                   [--tools ryzen-nb,onnxruntime,quark] [--quark-python PY]
                                   [--worker-memory-gb 8] [--no-recovery] [--markdown F] [--csv F] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

PRESETS = ["XINT8", "A8W8", "A16W8", "BF16"]
#: the presets onnxruntime's quantize_static has (no power-of-two scales for XINT8, no BF16)
ORT_PRESETS = ("A8W8", "A16W8")
TOOLS = ["ryzen-nb", "onnxruntime", "quark"]


@dataclass(frozen=True)
class Recovery:
    """A second row: ``model`` with ``preset`` and ``options`` set, and why."""

    model: str
    preset: str
    label: str
    options: dict[str, Any] = field(default_factory=dict)


#: where a preset's defaults lose the task: the option that wins it back (measured by the tests too)
RECOVERY = [
    # the output Concat (boxes 0..320 with scores 0..1) stays float by default; XINT8's HardSigmoid is what is left
    Recovery("nudenet_320n", "XINT8", "keep Sigmoid (no HardSigmoid)", {"extra": {"ConvertSigmoidToHardSigmoid": False}}),
    Recovery("ppocr_rec", "A8W8", "per-channel weights", {"per_channel": True}),
    Recovery("ppocr_rec", "A16W8", "per-channel weights", {"per_channel": True}),
    Recovery("ddddocr_det", "XINT8", "keep Sigmoid (no HardSigmoid)", {"extra": {"ConvertSigmoidToHardSigmoid": False}}),
    Recovery("ddddocr_det", "A8W8", "per-channel weights", {"per_channel": True}),
    Recovery("silero_vad_op15", "A8W8", "per-channel weights", {"per_channel": True}),
    Recovery("silero_vad_op15", "A16W8", "per-channel weights", {"per_channel": True}),
    Recovery("silero_vad_half", "A16W8", "per-channel weights", {"per_channel": True}),
    # the LayerNorm arithmetic that tf2onnx spells out element-wise left in float (a label more; A16W8 keeps all)
    Recovery("magika", "A8W8", "LayerNorm ops in float", {"op_types_to_exclude": [
        "ReduceMean", "Sub", "ReduceSumSquare", "Div", "Sqrt", "Reciprocal", "BatchNormalization"]}),
]


# ------------------------------------------------------------------------------------------------
# measuring one model (shared with tests/realworld)
# ------------------------------------------------------------------------------------------------
@dataclass
class Prepared:
    model: Any  # ryzen_nb.zoo.realworld.CorpusModel
    calibration: list[dict[str, np.ndarray]]
    evaluation: list[dict[str, np.ndarray]]
    reference: list[list[np.ndarray]]


@cache
def prepared(name: str) -> Prepared:
    """The corpus model, its samples and FP32's outputs on them, made once per process."""
    from ryzen_nb.zoo import realworld

    model = realworld.load(name)
    evaluation = model.feeds("evaluation")
    return Prepared(model, model.feeds("calibration"), evaluation, model.run(model.session(), evaluation))


@dataclass
class Measured:
    cosines: list[float]
    task: float
    seconds: float
    size_mb: float
    summary: Any = field(default=None, repr=False)

    @property
    def cosine(self) -> float:
        return min(self.cosines)


def output_cosines(reference: list[list[np.ndarray]], outputs: list[list[np.ndarray]]) -> list[float]:
    """Cosine per output, each output flattened and concatenated over the samples."""
    from ryzen_nb.metrics import cosine

    return [cosine(np.concatenate([r[k].reshape(-1) for r in reference]).astype(np.float64),
                   np.concatenate([o[k].reshape(-1) for o in outputs]).astype(np.float64))
            for k in range(len(reference[0]))]


def config(preset: str, options: dict[str, Any] | None = None) -> Any:
    """The preset's config with ``options`` set (``extra_options`` entries given as ``"extra": {...}``)."""
    import ryzen_nb

    if not options:
        return preset
    qc = ryzen_nb.get_default_config(preset)
    for key, value in options.items():
        if key == "extra":
            qc.extra_options.update(value)
        else:
            setattr(qc, key, value)
    return qc


def measure(name: str, preset: str, options: dict[str, Any] | None = None) -> Measured:
    """Quantize ``name`` in memory with ryzen-nb, run it in plain onnxruntime, score it against FP32.

    Raises :class:`OutputShapeChanged` when the quantized model's outputs are not FP32's shapes."""
    import ryzen_nb

    p = prepared(name)
    start = time.perf_counter()
    summary = ryzen_nb.quantize(p.model.path, None, config(preset, options), p.calibration, progress=False)
    seconds = time.perf_counter() - start
    outputs = p.model.run(summary.model, p.evaluation)  # CPU provider, no custom-op library
    check_outputs(p.reference, outputs)
    return Measured(output_cosines(p.reference, outputs), p.model.task_score(p.reference, outputs), seconds,
                    summary.model.ByteSize() / 1e6, summary)


class OutputShapeChanged(ValueError):
    """The quantized model's outputs are not FP32's (their number or a shape): no score compares them."""


def check_outputs(reference: list[list[np.ndarray]], outputs: list[list[np.ndarray]]) -> None:
    """Raise :class:`OutputShapeChanged` ("output shape changed (FP32's vs the tool's)") unless every
    sample's outputs have FP32's shapes: a flattened cosine of a transposed or resized output is garbage."""
    if len(outputs) != len(reference):
        raise OutputShapeChanged(f"output count changed ({len(reference)} samples vs {len(outputs)})")
    for ref, out in zip(reference, outputs):
        if len(ref) != len(out):
            raise OutputShapeChanged(f"output count changed ({len(ref)} vs {len(out)})")
        for k, (r, o) in enumerate(zip(ref, out)):
            if np.shape(r) != np.shape(o):
                where = f" in output {k}" if len(ref) > 1 else ""
                raise OutputShapeChanged(f"output shape changed ({tuple(np.shape(r))} vs {tuple(np.shape(o))}){where}")


def _quantizes(node: Any) -> bool:
    import onnx

    kind = node.op_type
    if "quantize" in kind.lower() or kind.startswith("QLinear") or kind.endswith("Integer"):
        # QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear; Quark's ExtendedQuantizeLinear,
        # BFPQuantizeDequantize, MXQuantizeDequantize; ryzen-nb's *QuantizeDequantize functions; QLinearConv,
        # MatMulInteger, ConvInteger
        return True
    return kind == "Cast" and any(a.name == "to" and a.i == onnx.TensorProto.BFLOAT16 for a in node.attribute)


def quantization_nodes(model: Any) -> int:
    """The operators of ``model`` (an ``onnx.ModelProto``; subgraphs and local functions included) that
    quantize: Q/DQ pairs, integer operators, a Cast to bfloat16 or a custom quantize(-dequantize) op.
    0 means the tool left the model as it was, whatever its scores say."""
    import onnx

    def walk(nodes: Any) -> int:
        count = 0
        for node in nodes:
            count += _quantizes(node)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    count += walk(attr.g.node)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    count += sum(walk(g.node) for g in attr.graphs)
        return count

    return walk(model.graph.node) + sum(walk(f.node) for f in model.functions)


NOT_QUANTIZED = "nothing quantized"


# ------------------------------------------------------------------------------------------------
# the other tools, through benchmarks/quantize.py's fresh-process workers
# ------------------------------------------------------------------------------------------------
def _calibration_npz(name: str, workdir: Path) -> Path:
    """The calibration feeds as one array per input (sample i = ``array[i]``), as the workers read them."""
    p = prepared(name)
    path = workdir / f"{name}_calibration.npz"
    if not path.exists():
        np.savez(path, **{key: np.stack([f[key] for f in p.calibration]) for key in p.calibration[0]})
    return path


#: the worker's address-space cap (GB; 0 = none): Quark took 21 GB on silero_vad_half XINT8 and the machine with it
WORKER_MEMORY_GB = 8.0


def short_error(exc: BaseException | str) -> str:
    """``Type: message`` of an exception in one line (onnxruntime's ``[ONNXRuntimeError] : 10 :
    INVALID_GRAPH : ...`` as ``INVALID_GRAPH: ...``), at most 300 characters."""
    import re

    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    found = re.search(r"\[ONNXRuntimeError\] : \d+ : ([A-Z_]+) : (.*)", text)
    if found:
        text = f"{found.group(1)}: {found.group(2)}"
    return text[:300]


def measure_tool(tool: str, name: str, preset: str, workdir: Path, python: str, timeout: float,
                 memory_gb: float = WORKER_MEMORY_GB) -> dict[str, Any]:
    """Quantize ``name`` with ``tool`` in a fresh ``python`` process, run its model in plain onnxruntime and
    score it against FP32. Never raises: a failure at any step (the tool, loading or running its model, an
    output shape it changed) is the cell's ``status: error`` with a short ``error``."""
    stage = "preparing the samples"
    try:
        import onnx
        import onnxruntime as ort

        from benchmarks import quantize as bench

        p = prepared(name)
        output = workdir / f"{name}_{preset}_{tool}.onnx"
        job = {"tool": tool, "model": str(p.model.path), "output": str(output), "preset": preset,
               "calibration": str(_calibration_npz(name, workdir)), "model_name": name}
        stage = "quantizing"
        result = bench.run_worker(python, job, workdir, timeout, memory_gb=memory_gb)
        notes = [f"pre-process: {result['preprocess']}"] if result.get("preprocess", "symbolic") != "symbolic" else []
        if result.get("memory_note"):
            notes.append(result["memory_note"])
        if result["status"] != "ok":
            return {"status": "error", "error": short_error(result.get("error", "?")), "log": result.get("log"),
                    **({"note": "; ".join(notes)} if notes else {})}
        stage = "loading its model"
        model = onnx.load(str(output))
        quantized = quantization_nodes(model) > 0
        if not quantized:
            notes.insert(0, NOT_QUANTIZED)
        custom = result if bench.custom_domains(model) and result.get("custom_op_library") else None
        stage = "making an onnxruntime session of its model"
        session = ort.InferenceSession(model.SerializeToString(), bench._session_options_for(custom),
                                       providers=["CPUExecutionProvider"])
        stage = "running its model"
        outputs = p.model.run(session, p.evaluation)
        stage = "scoring"
        check_outputs(p.reference, outputs)
        cosines = output_cosines(p.reference, outputs)
        task = p.model.task_score(p.reference, outputs)
    except OutputShapeChanged as exc:
        return {"status": "error", "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a failure is a cell of the table, the run goes on
        return {"status": "error", "error": short_error(exc), "stage": stage}
    return {"status": "ok", "cosine": min(cosines), "cosines": cosines, "task": task, "quantized": quantized,
            "note": "; ".join(notes), "quant_s": result["quant_s"], "size_mb": result["size_kb"] / 1e3,
            "version": result.get("version", "?")}


# ------------------------------------------------------------------------------------------------
# the table
# ------------------------------------------------------------------------------------------------
def _row(name: str, preset: str, tool: str, **values: Any) -> dict[str, Any]:
    from ryzen_nb.zoo.realworld import CORPUS

    entry = CORPUS[name]
    return {"model": name, "family": entry.family, "preset": preset, "tool": tool,
            "metric": entry.metric.name if entry.metric else "", **values}


def _ryzen_row(name: str, preset: str, label: str = "", options: dict[str, Any] | None = None) -> dict[str, Any]:
    try:
        m = measure(name, preset, options)
    except OutputShapeChanged as exc:
        return _row(name, preset + label, "ryzen-nb", status="error", error=str(exc))
    except Exception as exc:  # noqa: BLE001 - a failure is a row of the table
        return _row(name, preset + label, "ryzen-nb", status="error", error=short_error(exc))
    quantized = quantization_nodes(m.summary.model) > 0
    return _row(name, preset + label, "ryzen-nb", status="ok", cosine=m.cosine, task=m.task, quantized=quantized,
                note="" if quantized else NOT_QUANTIZED, quant_s=m.seconds, size_mb=m.size_mb)


def run(models: list[str], presets: list[str], tools: list[str], quark_python: str | None, recovery: bool,
        timeout: float, workdir: Path, memory_gb: float = WORKER_MEMORY_GB) -> list[dict[str, Any]]:
    """Every cell, printed as it is measured; a failing cell is recorded and the run goes on."""
    import sys

    from benchmarks import quantize as bench

    _, quark_status = bench.quark_probe(quark_python) if "quark" in tools else (None, "not asked")
    rows = []

    def add(row: dict[str, Any]) -> None:
        rows.append(row)
        print(_format(row), flush=True)

    for name in models:
        for preset in presets:
            add(_ryzen_row(name, preset))
            if "onnxruntime" in tools:
                if preset in ORT_PRESETS:
                    add(_row(name, preset, "onnxruntime", **measure_tool(
                        "onnxruntime", name, preset, workdir, sys.executable, timeout, memory_gb)))
                else:
                    add(_row(name, preset, "onnxruntime", status="n/a"))
            if "quark" in tools:
                if quark_status == "ok":
                    add(_row(name, preset, "quark", **measure_tool(
                        "quark", name, preset, workdir, quark_python, timeout, memory_gb)))
                else:
                    add(_row(name, preset, "quark", status=quark_status))
        if recovery:
            for r in RECOVERY:
                if r.model == name and r.preset in presets:
                    add(_ryzen_row(name, r.preset, f" + {r.label}", r.options))
    return rows


def _format(row: dict[str, Any]) -> str:
    head = f"{row['model']:18s} {row['preset']:40s} {row['tool']:11s}"
    if row["status"] != "ok":
        stage = f" (while {row['stage']})" if row.get("stage") else ""
        note = f" [{row['note']}]" if row.get("note") else ""
        return f"{head} {row['status']} {row.get('error', '')}{stage}{note}"
    note = f"  [{row['note']}]" if row.get("note") else ""
    return (f"{head} cosine {row['cosine']:.4f}  {row['metric']} {row['task']:.3f}  {row['quant_s']:6.1f} s  "
            f"{row['size_mb']:6.2f} MB{note}")


def _brief(error: str, limit: int = 64) -> str:
    """An error for a table cell: without a leading Python exception type, cut to ``limit`` characters."""
    kind, sep, message = error.partition(": ")
    if sep and kind.isidentifier() and kind.endswith(("Error", "Exception", "Exit", "Interrupt")):
        error = message
    error = error.strip() or kind
    return error if len(error) <= limit else error[:limit - 1] + "…"


def _cell(r: dict[str, Any] | None, seconds: bool = True) -> str:
    if r is None:
        return ""
    if r["status"] != "ok":
        if r["status"] != "error":
            return r["status"]
        return f"fails: {_brief(r.get('error', ''))}"
    note = f" ({r['note']})" if r.get("note") else ""
    return f"{r['cosine']:.3f} / {r['task']:.2f}" + (f" · {r['quant_s']:.0f} s" if seconds else "") + note


def _side(r: dict[str, Any] | None) -> str:
    """One tool's half of a Quark-table cell: cosine / task, ✗ (error) where it fails, – not measured."""
    if r is None:
        return "–"
    if r["status"] == "ok":
        note = f" ({r['note']})" if r.get("note") else ""
        return f"{r['cosine']:.3f} / {r['task']:.2f}{note}"
    if r["status"] == "error":
        return f"✗ ({_brief(r.get('error', '?'))})"
    return f"– ({r['status']})"


def _fp32_mb(model: str) -> float | None:
    try:
        return prepared(model).model.path.stat().st_size / 1e6
    except Exception:  # noqa: BLE001 - the table is made even when the corpus cannot be read
        return None


def markdown(rows: list[dict[str, Any]], load: tuple[float, float], quark_table: bool | None = None) -> str:
    """The README tables: per model, ryzen-nb's cosine / task score · quantize time for each preset, and
    onnxruntime's A8W8 / A16W8 beside it; the recovery rows, before -> after; and, when Quark was asked
    (``quark_table``; by default when there are Quark rows), ryzen-nb's cosine / task · Quark's per preset."""
    by = {(r["model"], r["preset"], r["tool"]): r for r in rows}
    asked = list(dict.fromkeys(r["preset"] for r in rows if " + " not in r["preset"]))  # recovery rows apart
    presets = [p for p in PRESETS if p in asked] + [p for p in asked if p not in PRESETS]
    models = list(dict.fromkeys(r["model"] for r in rows))
    lines = ["| model | family | task metric | " + " | ".join(presets) + " | onnxruntime A8W8 · A16W8 | MB: FP32 → int8 → BF16 |",
             "|" + "---|" * (len(presets) + 5)]
    for model in models:
        first = next(r for r in rows if r["model"] == model)
        ours = [_cell(by.get((model, p, "ryzen-nb"))) for p in presets]
        ort_cells = [_cell(by.get((model, p, "onnxruntime")), seconds=False) for p in ("A8W8", "A16W8")]
        ort = ort_cells[0] if len(set(ort_cells)) == 1 else " · ".join(ort_cells)
        sizes = [by.get((model, p, "ryzen-nb"), {}).get("size_mb") for p in ("XINT8", "BF16")]
        fp32 = _fp32_mb(model)
        size = ("?" if fp32 is None else f"{fp32:.1f}") + " → " + " → ".join(
            "?" if v is None else f"{v:.1f}" for v in sizes)
        lines.append(f"| {model} | {first['family']} | {first['metric']} | " + " | ".join(ours) + f" | {ort} | {size} |")
    recovered = [r for r in rows if r["tool"] == "ryzen-nb" and " + " in r["preset"]]
    if recovered:
        lines += ["", "| model | preset + option | cosine / task before | after |", "|---|---|---|---|"]
        for r in recovered:
            preset = r["preset"].split(" + ")[0]
            lines.append(f"| {r['model']} | {r['preset']} | {_cell(by.get((r['model'], preset, 'ryzen-nb')), False)} "
                         f"| {_cell(r, False)} |")
    quark_rows = [r for r in rows if r["tool"] == "quark"]
    if quark_table if quark_table is not None else bool(quark_rows):
        lines += ["", "Beside AMD Quark (cosine / task score, ryzen-nb · Quark; ✗ = fails, with its error; "
                      "– = not measured):", "",
                  "| model | " + " | ".join(presets) + " |", "|" + "---|" * (len(presets) + 1)]
        for model in models:
            cells = [f"{_side(by.get((model, p, 'ryzen-nb')))} · {_side(by.get((model, p, 'quark')))}" for p in presets]
            lines.append(f"| {model} | " + " | ".join(cells) + " |")
    quark = {r["status"] for r in quark_rows}
    versions = sorted({r["version"] for r in quark_rows if r.get("version")})
    lines.append("")
    lines.append(f"Quark: {', '.join(sorted(quark)) or 'not asked'}" + (f" ({', '.join(versions)})" if versions else "")
                 + f". Load average (1 min) {load[0]:.1f} at the start, {load[1]:.1f} at the end, on {os.cpu_count()} cores.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    from ryzen_nb.zoo.realworld import CORPUS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    default_models = [n for n in CORPUS if n != "ddddocr_captcha_quantized"]  # already quantized: refused
    parser.add_argument("--models", default=",".join(default_models), help="comma-separated corpus models")
    parser.add_argument("--presets", default=",".join(PRESETS), help="comma-separated presets")
    parser.add_argument("--tools", default=",".join(TOOLS), help="comma-separated: ryzen-nb,onnxruntime,quark")
    parser.add_argument("--quark-python", default=os.environ.get("RYZEN_NB_QUARK_PYTHON"),
                        help="a Python interpreter where amd-quark imports (default: $RYZEN_NB_QUARK_PYTHON)")
    parser.add_argument("--no-recovery", action="store_true", help="leave out the recovery rows")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds allowed per subprocess quantization")
    parser.add_argument("--worker-memory-gb", type=float, default=WORKER_MEMORY_GB,
                        help=f"address-space cap of each quantization subprocess, GB (default {WORKER_MEMORY_GB:g}; "
                             "0 = none); a tool that exceeds it is 'out of memory (cap N GB)'")
    parser.add_argument("--keep", help="keep the quantized models and logs in this folder")
    parser.add_argument("--markdown", help="also write the README table to this file")
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    parser.add_argument("--json", help="also write the rows to this JSON file")
    args = parser.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        raise SystemExit(f"unknown tools {unknown}; choose from {TOOLS}")
    models = [m for m in args.models.split(",") if m]
    if sorted(set(models) - set(CORPUS)):
        raise SystemExit(f"unknown models {sorted(set(models) - set(CORPUS))}; choose from {list(CORPUS)}")
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="realworld-") as scratch:
        workdir = Path(args.keep or scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        rows = run(models, [p for p in args.presets.split(",") if p], tools, args.quark_python,
                   not args.no_recovery, args.timeout, workdir, args.worker_memory_gb)
    table = markdown(rows, (load_start, os.getloadavg()[0]), quark_table="quark" in tools and bool(args.quark_python))
    print("\n" + table)
    if args.markdown:
        Path(args.markdown).write_text(table + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, default=float))
    if args.csv:
        import pandas as pd

        pd.DataFrame(rows).to_csv(args.csv, index=False)
    return rows


if __name__ == "__main__":
    main()
