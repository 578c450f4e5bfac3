"""The real-world benchmark's harness on a tiny model with fake tools (no corpus, no Quark): a failing tool is a
cell, not the end of the run; an output shape a tool changed, and a model a tool left unquantized, are said so;
the Quark table; the shared worker's reader, onnxruntime pre-processing fallback and memory cap; the quantize
benchmark printing each row as it completes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as oh
from onnx import numpy_helper as nh

from benchmarks import quantize as qbench
from benchmarks import realworld as bench


def _conv_model(transpose: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weight = nh.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "W")
    nodes = [oh.make_node("Conv", ["x", "W"], ["c"], pads=[1, 1, 1, 1]), oh.make_node("Relu", ["c"], ["r"])]
    if transpose:  # what a tool that changes the output's layout gives
        nodes.append(oh.make_node("Transpose", ["r"], ["y"], perm=[0, 2, 3, 1]))
        shape = [1, 8, 8, 4]
    else:
        nodes.append(oh.make_node("Identity", ["r"], ["y"]))
        shape = [1, 4, 8, 8]
    graph = oh.make_graph(nodes, "tiny", [oh.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [oh.make_tensor_value_info("y", TensorProto.FLOAT, shape)], [weight])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])


class _TinyCorpusModel:
    """The parts of ``ryzen_nb.zoo.realworld.CorpusModel`` the benchmark uses."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, model, feeds):
        from ryzen_nb.zoo.realworld import make_session

        session = model if hasattr(model, "get_inputs") else make_session(model)
        return [session.run(None, feed) for feed in feeds]

    def task_score(self, reference, outputs) -> float:
        return float(np.mean([np.argmax(r[0]) == np.argmax(o[0]) for r, o in zip(reference, outputs)]))


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    """A tiny corpus stand-in under every name, and fake tool workers that write the model each tool is given."""
    import ryzen_nb

    path = tmp_path / "fp32.onnx"
    onnx.save(_conv_model(), path)
    rng = np.random.default_rng(1)
    feeds = [{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(6)]
    model = _TinyCorpusModel(path)
    p = bench.Prepared(model, feeds[:4], feeds[4:], model.run(path, feeds[4:]))
    monkeypatch.setattr(bench, "prepared", lambda name: p)
    qdq = ryzen_nb.quantize(path, None, "A8W8", feeds[:4], progress=False).model
    outputs = {
        "qdq": qdq.SerializeToString(),
        "noop": path.read_bytes(),  # the FP32 model back: nothing quantized
        "transposed": _conv_model(transpose=True).SerializeToString(),
        "broken": b"not an onnx model",
    }
    calls = []

    def fake_worker(python, job, workdir, timeout, memory_gb=None):
        calls.append(job)
        kind = python  # the fake tools are told apart by their "interpreter"
        if kind == "raises":
            return {"status": "error", "error": "RuntimeError: the tool fails"}
        Path(job["output"]).write_bytes(outputs[kind])
        result = {"status": "ok", "quant_s": 0.5, "size_kb": len(outputs[kind]) / 1e3, "version": "fake"}
        if job["tool"] == "onnxruntime":
            result["preprocess"] = "no symbolic shape inference"
        return result

    monkeypatch.setattr(qbench, "run_worker", fake_worker)
    return p, calls


@pytest.mark.parametrize("kind", ["broken", "raises"])
def test_a_failing_tool_is_a_cell(tiny, tmp_path, kind) -> None:
    cell = bench.measure_tool("quark", "tiny", "XINT8", tmp_path, kind, 10)
    assert cell["status"] == "error" and cell["error"]


def test_an_output_shape_the_tool_changed_is_said(tiny, tmp_path) -> None:
    cell = bench.measure_tool("quark", "tiny", "XINT8", tmp_path, "transposed", 10)
    assert cell["status"] == "error"
    assert cell["error"] == "output shape changed ((1, 4, 8, 8) vs (1, 8, 8, 4))"


def test_a_model_left_unquantized_is_said(tiny, tmp_path) -> None:
    noop = bench.measure_tool("quark", "tiny", "XINT8", tmp_path, "noop", 10)
    assert noop["status"] == "ok" and noop["cosine"] > 0.9999 and not noop["quantized"]
    assert "nothing quantized" in noop["note"] and "nothing quantized" in bench._side(noop)
    done = bench.measure_tool("quark", "tiny", "XINT8", tmp_path, "qdq", 10)
    assert done["status"] == "ok" and done["quantized"] and "nothing quantized" not in done["note"]


def test_quantization_nodes_looks_into_subgraphs() -> None:
    def wrapped(inner: onnx.GraphProto) -> onnx.ModelProto:
        node = oh.make_node("If", ["c"], ["y"], then_branch=inner, else_branch=inner)
        graph = oh.make_graph([node], "g", [oh.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
        return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])

    def branch(nodes: list) -> onnx.GraphProto:
        return oh.make_graph(nodes, "b", [], [oh.make_tensor_value_info("y", TensorProto.FLOAT, [1])])

    const = oh.make_node("Constant", [], ["v"], value=nh.from_array(np.ones(1, np.float32)))
    assert bench.quantization_nodes(wrapped(branch([const, oh.make_node("Relu", ["v"], ["y"])]))) == 0
    bf16 = [const, oh.make_node("Cast", ["v"], ["b"], to=TensorProto.BFLOAT16), oh.make_node("Cast", ["b"], ["y"], to=1)]
    assert bench.quantization_nodes(wrapped(branch(bf16))) == 2  # one per branch
    custom = oh.make_node("ExtendedQuantizeLinear", ["v", "s", "z"], ["y"], domain="com.amd.quark")
    assert bench.quantization_nodes(wrapped(branch([const, custom]))) == 2


def test_run_goes_on_past_failures_and_prints_the_quark_table(tiny, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(qbench, "quark_probe", lambda python: ("0.13", "ok"))
    real = qbench.run_worker  # the fake

    def by_tool(python, job, workdir, timeout, memory_gb=None):  # onnxruntime fine, Quark's model broken
        return real("qdq" if job["tool"] == "onnxruntime" else "broken", job, workdir, timeout, memory_gb)

    monkeypatch.setattr(qbench, "run_worker", by_tool)
    rows = bench.run(["magika"], ["XINT8", "A8W8"], bench.TOOLS, "quark-python", False, 10, tmp_path)
    by = {(r["preset"], r["tool"]): r for r in rows}
    assert len(rows) == 6 and by["A8W8", "ryzen-nb"]["status"] == "ok"
    assert by["XINT8", "quark"]["status"] == by["A8W8", "quark"]["status"] == "error"
    assert by["A8W8", "onnxruntime"]["note"] == "pre-process: no symbolic shape inference"
    out = capsys.readouterr().out
    assert out.count("magika") == 6  # each cell printed as it is measured

    table = bench.markdown(rows, (0.0, 0.0), quark_table=True)
    assert "pre-process: no symbolic shape inference" in table  # the onnxruntime cell says its route
    lines = table.splitlines()
    start = lines.index("| model | XINT8 | A8W8 |")
    assert lines[start + 1] == "|---|---|---|"
    row = lines[start + 2]
    assert row.startswith("| magika | ") and row.count(" · ✗ (") == 2
    ours = by["XINT8", "ryzen-nb"]
    assert f"| magika | {ours['cosine']:.3f} / {ours['task']:.2f} · ✗ (" in row
    assert "| model | XINT8 | A8W8 |" not in bench.markdown(rows, (0.0, 0.0), quark_table=False)


def test_worker_reader_keeps_scalar_inputs_arrays(tmp_path) -> None:
    path = tmp_path / "calibration.npz"
    np.savez(path, x=np.arange(3, dtype=np.float32), y=np.zeros((3, 2), np.float32))  # x: a 0-d input per sample
    reader = qbench._worker_reader(str(path))
    feed = reader.get_next()
    assert type(feed["x"]) is np.ndarray and feed["x"].shape == () and feed["y"].shape == (2,)


def test_onnxruntime_pre_process_falls_back(tmp_path, monkeypatch) -> None:
    import onnxruntime.quantization as ortq

    real = ortq.quant_pre_process
    onnx.save(_conv_model(), tmp_path / "fp32.onnx")
    np.savez(tmp_path / "calibration.npz", x=np.random.default_rng(0).standard_normal((2, 1, 3, 8, 8)).astype(np.float32))

    def job(name: str) -> dict:
        return {"tool": "onnxruntime", "preset": "A8W8", "model": str(tmp_path / "fp32.onnx"),
                "output": str(tmp_path / f"{name}.onnx"), "calibration": str(tmp_path / "calibration.npz")}

    def no_symbolic(model, output, **options):
        if not options.get("skip_symbolic_shape"):
            raise Exception("Incomplete symbolic shape inference")  # what 8 of the 13 corpus models give
        return real(model, output, **options)

    monkeypatch.setattr(ortq, "quant_pre_process", no_symbolic)
    assert qbench._work_onnxruntime(job("retried"))["preprocess"] == "no symbolic shape inference"
    assert bench.quantization_nodes(onnx.load(tmp_path / "retried.onnx")) > 0

    def never(model, output, **options):
        raise RuntimeError("pre-processing fails")

    monkeypatch.setattr(ortq, "quant_pre_process", never)
    assert qbench._work_onnxruntime(job("raw"))["preprocess"] == "none (failed)"
    assert bench.quantization_nodes(onnx.load(tmp_path / "raw.onnx")) > 0


def test_worker_memory_cap(tmp_path) -> None:
    """A worker that asks for more than its cap dies of it, reported as such (not the machine's OOM)."""
    script = tmp_path / "greedy-python"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import numpy as np; a = np.empty(2**32, np.uint8)'\n")
    script.chmod(0o755)
    job = {"tool": "quark", "model_name": "tiny", "preset": "XINT8", "output": str(tmp_path / "out.onnx")}
    result = qbench.run_worker(str(script), job, tmp_path, 60, memory_gb=1)
    assert result["status"] == "error" and result["error"] == "out of memory (cap 1 GB)"


def test_a_tool_that_survives_the_memory_cap_is_noted(tmp_path) -> None:
    """Quark catches the MemoryError under the cap and calibrates another way (MinMSE -> NonOverflow): the
    run is ok, but not the default one, and the row says so."""
    code = ("import json, sys, pathlib; job = json.loads(pathlib.Path(sys.argv[-1]).read_text()); "
            "print('[QUARK-ERROR]: Unable to allocate 1.99 GiB for an array'); "
            "pathlib.Path(job['output']).write_bytes(b'x'); "
            "pathlib.Path(job['result']).write_text(json.dumps({'tool': 'quark', 'status': 'ok', 'quant_s': 1.0}))")
    script = tmp_path / "fallback-python"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -c \"{code}\" \"$@\"\n")
    script.chmod(0o755)
    job = {"tool": "quark", "model_name": "tiny", "preset": "XINT8", "output": str(tmp_path / "out.onnx")}
    result = qbench.run_worker(str(script), job, tmp_path, 60, memory_gb=2)
    assert result["status"] == "ok", result
    assert result["memory_note"] == "ran out of memory under the 2 GB cap and went on, see its log"


def test_quantize_benchmark_prints_each_row_as_it_completes(tmp_path, monkeypatch, capsys) -> None:
    path = tmp_path / "tiny_fp32.onnx"
    onnx.save(_conv_model(), path)
    rng = np.random.default_rng(0)
    info = {"path": path, "calibration": tmp_path / "c.npz", "label": "tiny",
            "holdout": [{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)}]}
    monkeypatch.setattr(qbench, "build_models", lambda workdir, samples, holdout, models: {"resnet": info})
    seen = []

    def quantization(python, job, *args, **kwargs):
        seen.append(capsys.readouterr().out)  # what was printed before this run started
        sys.stdout.write(seen[-1])
        return {"status": "ok", "quant_s": 0.1, "import_s": 0.1, "rss_mb": 100.0, "size_kb": 1.0, "version": "x"}

    monkeypatch.setattr(qbench, "run_quantization", quantization)
    monkeypatch.setattr(qbench, "evaluate", lambda *args, **kwargs: {
        "cosine": 0.99, "top1": 1.0, "latency_ms": 1.0, "fp32_ms": 1.0, "speed": 1.0, "custom_ops": "-"})
    qbench.main(["--models", "resnet", "--presets", "A8W8,BF16", "--tools", "ryzen-nb", "--quark-python", "",
                 "--rounds", "1", "--keep", str(tmp_path / "keep")])
    assert len(seen) == 2 and "resnet" in seen[1] and "A8W8" in seen[1] and "0.99" in seen[1]


def test_the_table_has_a_column_for_every_preset_asked() -> None:
    """--presets BFP16,MX6 printed a table of empty cells: its columns came from the default presets only."""
    def row(preset: str, cosine: float) -> dict:
        return {"model": "magika", "preset": preset, "tool": "ryzen-nb", "status": "ok", "cosine": cosine,
                "task": 1.0, "quant_s": 0.5, "size_mb": 1.1, "family": "text", "metric": "top-1 agreement"}

    lines = bench.markdown([row("BFP16", 0.9957), row("MX6", 0.7228), row("MX6 + per-channel", 0.8)],
                           (0.0, 0.0)).splitlines()
    assert lines[0].startswith("| model | family | task metric | BFP16 | MX6 | onnxruntime")
    assert lines[2].startswith("| magika | text | top-1 agreement | 0.996 / 1.00 · 0 s | 0.723 / 1.00 · 0 s |")
