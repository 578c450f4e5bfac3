"""The JupyterLab extension's server endpoints, over real HTTP on 127.0.0.1 (Jupyter server's own
pytest fixtures start the server with ryzen-nb's extension enabled)."""

from __future__ import annotations

import json

import nbformat
import onnx
import pytest
from tornado.httpclient import HTTPClientError

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.jupyter import service
from ryzen_nb.spec import facts
from ryzen_nb.testing import random_images, resnet_cnn


@pytest.fixture
def jp_server_config():
    return {"ServerApp": {"jpserver_extensions": {"ryzen_nb.jupyter": True}}}


@pytest.fixture
def models(jp_root_dir):
    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)
    onnx.save(model, str(jp_root_dir / "cnn.onnx"))
    q = ryzen_nb.quantize(model, None, "XINT8", random_images(4, size=16), progress=False).model
    onnx.save(q, str(jp_root_dir / "cnn_xint8.onnx"))
    dynamic = resnet_cnn(0, blocks=(1,), width=8, image_size=16)
    dynamic.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(dynamic, str(jp_root_dir / "dynamic.onnx"))
    (jp_root_dir / "notes.onnx").write_text("not a model")
    return jp_root_dir


async def _json(jp_fetch, *path, method="GET", body=None, **params):
    kwargs = {"method": method, "params": params}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch("ryzen-nb", *path, **kwargs)
    return json.loads(response.body)


async def _error(jp_fetch, *path, method="GET", body=None, **params) -> tuple[int, str]:
    with pytest.raises(HTTPClientError) as failure:
        await _json(jp_fetch, *path, method=method, body=body, **params)
    return failure.value.code, json.loads(failure.value.response.body)["error"]


async def test_tutorials_are_listed_and_copied_without_overwriting(jp_fetch, jp_root_dir) -> None:
    listing = (await _json(jp_fetch, "tutorials"))["tutorials"]
    # in the index's order: the primer first, then the tutorials, the solutions last
    assert listing[0]["name"] == "00_primer" and listing[0]["number"] == 0
    assert {"01_getting_started", "11_solutions"} <= {t["name"] for t in listing}
    assert [t["number"] for t in listing] == sorted(t["number"] for t in listing)
    assert all(t["title"] and t["teaches"] for t in listing)
    (jp_root_dir / "work").mkdir()
    first = await _json(jp_fetch, "tutorials", "01_getting_started", "copy", method="POST", body={"directory": "work"})
    assert first == {"path": "work/01_getting_started.ipynb", "status": "created"}
    again = await _json(jp_fetch, "tutorials", "01_getting_started", "copy", method="POST", body={"directory": "work"})
    assert again["status"] == "unchanged"
    copy = jp_root_dir / "work" / "01_getting_started.ipynb"
    copy.write_text(copy.read_text().replace("Getting started", "My notes"))
    kept = await _json(jp_fetch, "tutorials", "01_getting_started", "copy", method="POST", body={"directory": "work"})
    assert kept["status"] == "kept-your-copy" and "My notes" in copy.read_text()  # never overwritten
    status, message = await _error(jp_fetch, "tutorials", "01_getting_startd", "copy", method="POST", body={})
    assert status == 404 and "01_getting_started" in message
    status, message = await _error(jp_fetch, "tutorials", "01_getting_started", "copy", method="POST",
                                   body={"directory": "../.."})
    assert status == 403 and "outside" in message


async def test_onnx_viewer_summary_and_partition(jp_fetch, models) -> None:
    summary = await _json(jp_fetch, "onnx", path="cnn_xint8.onnx", target="PHX")
    assert summary["quantized"] and summary["precisions"] == ["as-is"] and summary["opset"] >= 17
    assert summary["inputs"] == [{"name": "input", "shape": [1, 3, 16, 16], "dtype": "float32"}]
    assert summary["op_histogram"]["Conv"] >= 3 and summary["parameters"] > 1000
    partition = summary["partition"]
    assert partition["target"] == "PHX" and partition["npu_operators"] > partition["cpu_operators"]
    # the share and the counts are NPUProgram's: every node counted, quantizers included, as the EP log does
    program = npu.compile(onnx.load(str(models / "cnn_xint8.onnx")), "PHX")
    assert (partition["npu_operators"], partition["cpu_operators"]) == (program.npu_operators, program.cpu_operators)
    assert partition["npu_operators"] + partition["cpu_operators"] == len(partition["nodes"])
    assert partition["npu_share"] == round(100 * program.npu_share, 2) and f"{partition['npu_share']:.2f}%" in partition["ep_log"]
    assert "[Vitis AI EP] No. of Operators" in partition["ep_log"] and partition["latency_ms"] > 0
    assert all(row["reason"] for row in partition["cpu_reasons"])
    # the graph view's edges: each node's tensors, as the program has them (no empty optional inputs)
    assert [(n["inputs"], n["outputs"]) for n in partition["nodes"]] == [
        ([t for t in n.inputs if t], list(n.outputs)) for n in program.nodes]
    produced = {t for n in partition["nodes"] for t in n["outputs"]}
    assert any(t in produced for n in partition["nodes"] for t in n["inputs"]), "no node reads another's output"
    fp32 = await _json(jp_fetch, "onnx", path="cnn.onnx", target="STX", precision="XINT8")
    assert fp32["precisions"] == list(service.PRECISION_MENU) and fp32["partition"]["precisions"].get("XINT8")
    as_is = await _json(jp_fetch, "onnx", path="cnn.onnx", target="STX")
    assert set(as_is["partition"]["precisions"]) == {"BF16"}  # XDNA2 runs an FP32 model as BF16
    # no target or precision named (the viewer's first request): the server's defaults, not the front end's
    default = await _json(jp_fetch, "onnx", path="cnn.onnx")
    assert (default["target"], default["precision"]) == (facts()["default_target"], service.AS_IS)
    assert default["partition"]["target"] == "STX" and "targets" not in default  # the targets are in the facts


async def test_the_facts_endpoint_is_the_spec(jp_fetch) -> None:
    """What the viewer labels and colours with: ryzen_nb.spec.facts(), as JSON."""
    answer = await _json(jp_fetch, "facts")
    assert answer == json.loads(json.dumps(facts()))
    assert [p["name"] for p in answer["precisions"]][:5] == ["XINT8", "A8W8", "A16W8", "BF16", "BFP16"]
    assert all(p["colour"].startswith("#") and p["label"] and p["description"] for p in answer["precisions"])
    assert {d["name"] for d in answer["devices"]} == {"NPU", "CPU"}
    assert {t["name"] for t in answer["targets"]} == {"PHX", "HPT", "STX", "KRK", "STXH"}
    # every precision of the viewer's menu is labelled by the facts
    assert set(service.PRECISION_MENU) - {service.AS_IS} <= {p["name"] for p in answer["precisions"]}


async def test_onnx_viewer_errors(jp_fetch, models, monkeypatch) -> None:
    assert (await _error(jp_fetch, "onnx", path="notes.onnx"))[0] == 415
    status, message = await _error(jp_fetch, "onnx", path="missing.onnx")
    assert status == 404 and "missing.onnx" in message
    dynamic = await _json(jp_fetch, "onnx", path="dynamic.onnx")
    assert dynamic["partition"] is None and "Dynamic input dimensions" in dynamic["partition_error"]
    status, message = await _error(jp_fetch, "onnx", path="cnn_xint8.onnx", precision="A8W8")
    assert status == 400 and "already quantized" in message
    monkeypatch.setattr(service, "MAX_MODEL_MB", 0.001)
    status, message = await _error(jp_fetch, "onnx", path="cnn.onnx")
    assert status == 413 and "up to" in message


async def test_quantize_notebook_is_written_beside_the_model(jp_fetch, models) -> None:
    first = await _json(jp_fetch, "quantize-notebook", method="POST", body={"path": "cnn.onnx"})
    second = await _json(jp_fetch, "quantize-notebook", method="POST", body={"path": "cnn.onnx"})
    assert (first["path"], second["path"]) == ("quantize_cnn.ipynb", "quantize_cnn-1.ipynb")
    notebook = nbformat.read(str(models / first["path"]), as_version=4)
    source = "\n".join(c.source for c in notebook.cells)
    assert 'MODEL = "cnn.onnx"' in source and "ConfigBuilder(MODEL" in source and "CalibrationWizard(MODEL)" in source
    status, _ = await _error(jp_fetch, "quantize-notebook", method="POST", body={"path": "notes.txt"})
    assert status == 404
