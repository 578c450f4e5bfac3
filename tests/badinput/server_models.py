"""Models for the server's bad-input cases: small, broken, hidden, with external data that is
huge, missing, hidden or outside the server's folder, and a ~300 MB one for the load test."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.testing import resnet_cnn


def with_external(name: str, location: str, length: int) -> bytes:
    """A tiny .onnx whose one weight (``length`` bytes of float32) lives in the external file
    ``location``: the graph alone is a couple of hundred bytes."""
    n = length // 4
    weight = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[n], data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", "0"), ("length", str(length))):
        weight.external_data.add(key=key, value=value)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], name,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [n])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def sparse(path: Path, size: int) -> None:
    """A file of ``size`` bytes that takes no disk space."""
    with open(path, "wb") as f:
        f.truncate(size)


def populate(root: Path) -> None:
    """The server's folder for the hostile requests."""
    cnn = resnet_cnn(0, blocks=(1,), width=4, image_size=8)
    onnx.save(cnn, str(root / "cnn.onnx"))
    (root / "notes.onnx").write_text("not a model")
    (root / "notes.txt").write_text("not a model")
    (root / "empty.onnx").write_bytes(b"")
    (root / "trunc.onnx").write_bytes((root / "cnn.onnx").read_bytes()[:900])
    (root / "dir.onnx").mkdir()
    onnx.save(cnn, str(root / ".secret.onnx"))
    (root / ".cache").mkdir()
    onnx.save(cnn, str(root / ".cache" / "m.onnx"))
    os.symlink(".secret.onnx", root / "visible.onnx")
    outside = root.parent / f"outside-{root.name}"
    outside.mkdir()
    onnx.save(cnn, str(outside / "m.onnx"))
    os.symlink(outside / "m.onnx", root / "escape.onnx")
    (root / "huge.onnx").write_bytes(with_external("huge", "huge.bin", 600 * 2**20))
    sparse(root / "huge.bin", 600 * 2**20)
    (root / "gone.onnx").write_bytes(with_external("gone", "gone.bin", 64))
    (root / "climb.onnx").write_bytes(with_external("climb", f"../outside-{root.name}/w.bin", 64))
    sparse(outside / "w.bin", 64)
    (root / "hidden-data.onnx").write_bytes(with_external("hidden", ".weights/w.bin", 64))
    (root / ".weights").mkdir()
    sparse(root / ".weights" / "w.bin", 64)
    (root / "work").mkdir()
    (root / ".private").mkdir()


def big_model(path: Path, megabytes: int = 300) -> None:
    """A MatMul whose weight is ``megabytes`` MB of float32, saved inline (one .onnx file)."""
    k = 8192
    n = megabytes * 2**20 // (4 * k)
    weight = numpy_helper.from_array(np.zeros((k, n), np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")], "big",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path.write_bytes(model.SerializeToString())
