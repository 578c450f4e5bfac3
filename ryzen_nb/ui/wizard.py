"""The calibration wizard: a step-by-step widget that builds calibration data (and a held-out
evaluation split) for a model, checks it against the model's inputs before anything runs, and
shows the Python code that builds the same data without the widget.

Example::

    import ryzen_nb
    from ryzen_nb.ui.wizard import CalibrationWizard

    wizard = CalibrationWizard("resnet_digits")   # a path, an onnx.ModelProto, a zoo name or a ZooModel
    wizard                                        # Source -> Preprocessing -> Mapping -> Preview -> Size
    wizard.calibration_size.value = 50            # every control is an attribute: scripts and tests drive them
    summary = ryzen_nb.quantize(wizard.target.path, "digits_xint8.onnx", "XINT8", wizard.reader())
    feeds, labels = wizard.evaluation()           # held out: never used for calibration
    print(wizard.code)                            # the same data, as code to paste in a notebook

The module has two layers. The data logic is plain Python and testable on its own: a
:class:`Recipe` (what the user chose) and a :class:`ModelTarget` (what the model takes) go into
:func:`build_data` (the prepared feeds, problems and notes), :func:`generate_code` (the same thing
as code) and :func:`mapping_rows` (the model's inputs next to what the data gives). The widget,
:class:`CalibrationWizard`, only turns its controls into a Recipe and shows the results.
"""

from __future__ import annotations

import base64
import contextlib
import difflib
import io
import keyword
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ipywidgets as w
import numpy as np
import onnx

from ryzen_nb import zoo
from ryzen_nb.calibration.readers import IMAGE_SUFFIXES, ArrayReader, CalibrationReader, ImageFolderReader, make_reader
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError, UnknownNameError
from ryzen_nb.graph.io import load_model
from ryzen_nb.graph.prepare import InputSpec, input_specs
from ryzen_nb.ui._base import ErrorBox, esc, surfaces_errors
from ryzen_nb.zoo.datasets import DATASETS
from ryzen_nb.zoo.models import MODELS
from ryzen_nb.zoo.preprocessing import TextEncoder

__all__ = [
    "CalibrationWizard",
    "ImageOptions",
    "MappingRow",
    "ModelTarget",
    "PreparedData",
    "Recipe",
    "TextOptions",
    "build_data",
    "check_samples",
    "generate_code",
    "mapping_rows",
    "split_indices",
]

Feed = dict[str, np.ndarray]

#: the wizard's steps, in order; ``wizard.go()`` takes an index or one of these names (any case)
STEPS = ("Source", "Preprocessing", "Mapping", "Preview", "Size")
#: where calibration data can come from: key -> what the Source step calls it
SOURCES = {
    "images": "Folder of images",
    "npy": "Folder of .npy / .npz files",
    "variable": "Notebook array or list",
    "zoo": "Zoo data set",
    "texts": "Texts (notebook list or .txt file)",
}
#: the normalisations of ImageFolderReader
NORMALIZATIONS = ("imagenet", "minus127_div128", "unit", "none")
LAYOUTS = ("NCHW", "NHWC")
#: how many different problems are spelled out in ``problems`` (further ones are counted): a folder of
#: 500 wrongly shaped files gives one clear message, not 500
MAX_REPORTED = 3
PREVIEW_IMAGES = 8
PREVIEW_TEXTS = 8
#: values drawn in the histogram at most: enough for its shape, quick to send to the browser
HISTOGRAM_VALUES = 200_000
#: the zoo data set each zoo model is evaluated on (the wizard's default for that model)
DATASET_FOR_MODEL = {
    "resnet_digits": "digits",
    "efficientnet_lite0": "imagenet_samples",
    "resnet50": "imagenet_samples",
    "minilm_l6": "sentences",
    "gte": "sentences",
    "minilm_sentiment": "rotten_tomatoes",
    "distilbert_sst2": "rotten_tomatoes",
}


# ------------------------------------------------------------------------------------------------
# what the user chose, and the model it is for
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ImageOptions:
    """How images become tensors (passed as is to :class:`ImageFolderReader`).

    The shorter side is resized to ``resize`` (None: the crop size / 0.875, the ImageNet
    convention), the centre ``size`` (height, width) is cropped, then normalised and laid out.
    """

    size: tuple[int, int] = (224, 224)
    resize: int | None = None
    normalize: str = "imagenet"
    layout: str = "NCHW"
    grayscale: bool = False


@dataclass(frozen=True)
class TextOptions:
    """How texts become token ids for a model that is not a zoo model: a ``tokenizer.json`` file
    (Hugging Face ``tokenizers``) and the fixed sequence length of the model's inputs."""

    tokenizer: str = ""
    sequence_length: int = 128


@dataclass(frozen=True)
class Recipe:
    """Everything the user chose in the wizard; :func:`build_data` and :func:`generate_code` take it.

    Example::

        Recipe(source="zoo", dataset="digits", calibration_size=50, evaluation_size=100)
        Recipe(source="images", folder="calib/", image=ImageOptions(size=(224, 224)))
    """

    #: one of :data:`SOURCES`
    source: str = "images"
    #: the folder of images or of .npy/.npz files
    folder: str = ""
    #: a notebook variable holding the data (an array, a list of arrays or feed dicts, a list of texts)
    variable: str = ""
    #: an optional notebook variable holding one label per sample (variable and texts sources)
    labels_variable: str = ""
    #: a zoo data set name
    dataset: str = ""
    #: a .txt file of texts, one per line (texts source; used instead of ``variable`` when given)
    text_file: str = ""
    image: ImageOptions = field(default_factory=ImageOptions)
    text: TextOptions = field(default_factory=TextOptions)
    #: counted in samples: one sample is one model run (one image, one text); for the sentence-pair
    #: data set ``sentences`` it counts pairs, each two model runs
    calibration_size: int = 100
    evaluation_size: int = 100
    #: seed of the calibration / evaluation shuffle (sources other than the zoo, whose splits are fixed)
    seed: int = 0

    def missing(self) -> str:
        """What still has to be chosen before there is any data ("" once the source is complete)."""
        if self.source not in SOURCES:
            raise UnknownNameError("calibration data source", self.source, SOURCES)
        if self.source == "images" and not self.folder:
            return "No folder yet: type the folder of calibration images in step 1 (Source)."
        if self.source == "npy" and not self.folder:
            return "No folder yet: type the folder of .npy / .npz files in step 1 (Source)."
        if self.source == "variable" and not self.variable:
            return ("No variable yet: type the name of the notebook variable holding the data in step 1 (Source), "
                    "or call wizard.set_data(array).")
        if self.source == "zoo" and not self.dataset:
            return "No zoo data set chosen yet (step 1, Source)."
        if self.source == "texts" and not (self.text_file or self.variable):
            return ("No texts yet: give a .txt file (one text per line) or the name of a notebook list of texts "
                    "in step 1 (Source), or call wizard.set_data(list_of_texts).")
        return ""


@dataclass
class ModelTarget:
    """The model the data is for: its inputs, and how the generated code refers to it.

    Example::

        target = ModelTarget.resolve("resnet_digits")   # or a path, an onnx.ModelProto, a ZooModel
        target.names, target.shapes                     # ['image'], {'image': [1, 1, 8, 8]}
    """

    specs: list[InputSpec]
    #: shown in the widget's title and the code's first line
    label: str
    path: Path | None = None
    #: a :class:`ryzen_nb.zoo.ZooModel` when the model is one (its own preprocessing is then used)
    zoo_model: Any = None

    @classmethod
    def resolve(cls, model: Any) -> ModelTarget:
        """A target from a path, an ``onnx.ModelProto``, bytes, a zoo model name or a ``ZooModel``."""
        if isinstance(model, str) and model in MODELS and not Path(model).exists():
            model = zoo.load_model(model)
        if isinstance(model, zoo.ZooModel):
            # only the graph's inputs are needed: the weights can stay on disk
            graph = onnx.load(str(model.path), load_external_data=False)
            return cls(input_specs(graph), f"zoo model {model.name}", Path(model.path), model)
        proto = load_model(model)
        path = Path(model).expanduser() if isinstance(model, (str, os.PathLike)) else None
        label = path.name if path is not None else (proto.graph.name or "the model")
        return cls(input_specs(proto), label, path)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.specs]

    @property
    def shapes(self) -> dict[str, list[Any]]:
        return {s.name: list(s.shape) for s in self.specs}

    @property
    def is_text(self) -> bool:
        """A model fed with token ids (BERT-style input names, or a zoo text model)."""
        if self.zoo_model is not None:
            return self.zoo_model.task != "image-classification"
        return "input_ids" in self.names

    @property
    def zoo_name(self) -> str | None:
        return None if self.zoo_model is None else self.zoo_model.name

    def image_defaults(self) -> ImageOptions:
        """Crop size, layout and channels read from a static 4-D input shape (N, C, H, W or N, H, W, C)."""
        shape = self.specs[0].shape if self.specs else ()
        if len(shape) == 4:
            if shape[1] in (1, 3) and all(isinstance(d, int) for d in shape[2:]):
                return ImageOptions(size=(int(shape[2]), int(shape[3])), layout="NCHW", grayscale=shape[1] == 1)
            if shape[3] in (1, 3) and all(isinstance(d, int) for d in shape[1:3]):
                return ImageOptions(size=(int(shape[1]), int(shape[2])), layout="NHWC", grayscale=shape[3] == 1)
        return ImageOptions()

    def text_defaults(self) -> TextOptions:
        """The sequence length of a static ``input_ids`` input, and a tokenizer.json beside the model file."""
        length = 128
        for spec in self.specs:
            if spec.name == "input_ids" and len(spec.shape) == 2 and isinstance(spec.shape[1], int):
                length = int(spec.shape[1])
        tokenizer = ""
        if self.path is not None and (self.path.parent / "tokenizer.json").is_file():
            tokenizer = str(self.path.parent / "tokenizer.json")
        return TextOptions(tokenizer=tokenizer, sequence_length=length)

    def default_dataset(self) -> str:
        """The zoo data set for this model; otherwise one that ships with ryzen-nb (works offline)."""
        if self.zoo_name in DATASET_FOR_MODEL:
            return DATASET_FOR_MODEL[self.zoo_name]
        return "sentences" if self.is_text else "digits"

    def default_source(self) -> str:
        if self.zoo_model is not None:
            return "zoo"
        if self.is_text:
            return "texts"
        shape = self.specs[0].shape if len(self.specs) == 1 else ()
        return "images" if len(shape) == 4 and (shape[1] in (1, 3) or shape[3] in (1, 3)) else "variable"

    def reference(self) -> str:
        """How the generated code names the model (in the ``ryzen_nb.quantize`` line)."""
        if self.zoo_model is not None:
            return "model.path"
        if self.path is not None:
            return repr(str(self.path))
        return "model"


def preprocessing_kind(recipe: Recipe, target: ModelTarget) -> str:
    """How samples become feeds for this source and model:

    * ``"images"``: :class:`ImageFolderReader` (resize, centre crop, normalise, layout);
    * ``"zoo-model"``: the zoo model's own ``preprocess`` (zoo data, or texts for a zoo text model);
    * ``"tokenizer"``: a ``tokenizer.json`` at a fixed sequence length (texts for any other model);
    * ``"as-is"``: arrays go in unchanged (float64 becomes float32).
    """
    if recipe.source == "images":
        return "images"
    if recipe.source == "texts":
        return "zoo-model" if target.zoo_model is not None and target.is_text else "tokenizer"
    if recipe.source == "zoo":
        if target.zoo_model is not None:
            return "zoo-model"
        return "tokenizer" if _is_text_dataset(recipe.dataset) else "as-is"
    return "as-is"


def _is_text_dataset(name: str) -> bool:
    return name in DATASETS and DATASETS[name].task != "image-classification"


def _is_pair_dataset(name: str) -> bool:
    """Data sets whose samples are sentence pairs (two model runs each)."""
    return name in DATASETS and DATASETS[name].task == "sentence-similarity"


# ------------------------------------------------------------------------------------------------
# building the data: sources, preprocessing, split
# ------------------------------------------------------------------------------------------------


@dataclass
class SamplePool:
    """The samples of a source before the split, and how one becomes its feeds."""

    samples: Sequence[Any]
    #: one raw sample -> its feed dicts (one, or two for a sentence pair)
    prepare: Callable[[Any], list[Feed]]
    labels: np.ndarray | None = None
    #: what a raw sample is, for the preview: "image-file", "image-array", "array", "text" or "pair"
    kind: str = "array"


@dataclass
class PreparedData:
    """The prepared calibration and evaluation feeds, with what was found on the way."""

    calibration: list[Feed]
    evaluation: list[Feed]
    evaluation_labels: np.ndarray | None
    #: the raw samples behind the first calibration feeds (files, arrays, texts), for the preview
    preview: list[Any]
    #: the kind of ``preview`` items (see :class:`SamplePool`)
    kind: str
    #: how many samples the source holds, in words
    available: str
    #: remarks that do not stop anything (capped sizes, few samples)
    notes: list[str] = field(default_factory=list)
    #: what would make calibration fail or go wrong, with the fix
    problems: list[str] = field(default_factory=list)

    @property
    def calibration_megabytes(self) -> float:
        """Memory of the prepared calibration tensors, in MB (10^6 bytes)."""
        return sum(a.nbytes for feed in self.calibration for a in feed.values()) / 1e6

    def token_counts(self) -> list[int] | None:
        """Non-padding tokens of each calibration text (from its attention mask), or None for non-text data."""
        if self.kind not in ("text", "pair"):
            return None
        counts = []
        for feed in self.calibration:
            if "attention_mask" in feed:
                counts.append(int(np.count_nonzero(feed["attention_mask"])))
            elif "input_ids" in feed:  # no mask: padding is token id 0 in BERT vocabularies
                counts.append(int(np.count_nonzero(feed["input_ids"])))
        return counts


def split_indices(count: int, calibration: int, evaluation: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint calibration and evaluation indices into ``range(count)``, from a seeded shuffle.

    The shuffle keeps a folder sorted by class (``cat_001.jpg``... ``dog_001.jpg``) from giving a
    calibration set of cats only. Calibration is served first; evaluation gets what is left, up to
    its size. Example: ``split_indices(10, 4, 3)`` -> 4 and 3 sorted indices, none shared.
    """
    order = np.random.default_rng(seed).permutation(count)
    return np.sort(order[:calibration]), np.sort(order[calibration : calibration + evaluation])


def lookup_variable(namespace: Mapping[str, Any], name: str, what: str = "data") -> Any:
    """The value of notebook variable ``name``, or an error naming the closest variables."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise CalibrationDataError(f"{name!r} is not a Python variable name; give the name of the variable "
                                   f"holding the {what} (e.g. x_calib).")
    if name not in namespace:
        close = difflib.get_close_matches(name, [k for k in namespace if not k.startswith("_")], n=1)
        guess = f" Did you mean {close[0]!r}?" if close else ""
        raise CalibrationDataError(
            f"There is no variable {name!r} in the notebook.{guess} Define it in a cell first "
            f"(e.g. {name} = np.load('calibration.npy')), or give the {what} with wizard.set_data(...)."
        )
    return namespace[name]


def _image_files_in(folder: Path) -> bool:
    return any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir())


def _images_pool(recipe: Recipe, target: ModelTarget) -> SamplePool:
    name = _single_input(target, "An image folder")
    o = recipe.image
    images = ImageFolderReader(recipe.folder, size=o.size, input_name=name, resize=o.resize, normalize=o.normalize,
                               layout=o.layout, grayscale=o.grayscale)
    return SamplePool(images.files, lambda path: [{name: images.load(path)}], kind="image-file")


def _npy_pool(recipe: Recipe, target: ModelTarget) -> SamplePool:
    folder = Path(recipe.folder).expanduser()
    # make_reader picks the image reader as soon as one image is in the folder: say so instead
    if folder.is_dir() and _image_files_in(folder):
        raise CalibrationDataError(f"{recipe.folder!r} holds images; choose the source 'Folder of images' "
                                   "(or move the images out of the .npy folder).")
    samples = list(make_reader(recipe.folder, input_names=target.names, input_shapes=target.shapes))
    return SamplePool(samples, lambda feed: [feed], kind="array")


def _variable_pool(recipe: Recipe, target: ModelTarget, namespace: Mapping[str, Any]) -> SamplePool:
    data = lookup_variable(namespace, recipe.variable)
    if isinstance(data, (list, tuple)) and data and all(isinstance(t, str) for t in data):
        raise CalibrationDataError(f"{recipe.variable!r} is a list of texts; choose the source 'Texts' "
                                   "(they are tokenized there).")
    if isinstance(data, Iterator):
        # the wizard reads its source again on every change: a generator would be empty the second time
        raise CalibrationDataError(f"{recipe.variable!r} is an iterator (a generator?), which can be read only once; "
                                   f"make it a list first: {recipe.variable} = list({recipe.variable}).")
    samples = list(make_reader(data, input_names=target.names, input_shapes=target.shapes))
    # a count mismatch often means the array was split wrongly (an axis short: read as one sample)
    read_as = ""
    if samples and isinstance(samples[0], Mapping):
        given = ", ".join(f"{name!r} {_dims(np.shape(value))}" for name, value in samples[0].items())
        read_as = f" (each read as {given}; the model takes {', '.join(_dims(s.shape) for s in target.specs)})"
    return SamplePool(samples, lambda feed: [feed], _labels(recipe, namespace, len(samples), read_as), kind="array")


def _labels(recipe: Recipe, namespace: Mapping[str, Any], count: int, read_as: str = "") -> np.ndarray | None:
    """The labels of the notebook variable ``recipe.labels_variable`` (one per sample), if one is named."""
    if not recipe.labels_variable:
        return None
    labels = np.asarray(lookup_variable(namespace, recipe.labels_variable, "labels"))
    if labels.ndim == 0 or len(labels) != count:
        raise CalibrationDataError(
            f"{recipe.labels_variable!r} holds {labels.size} label(s) but the source gives {count} samples{read_as}; "
            "give one label per sample, in the same order."
        )
    return labels


def read_texts(recipe: Recipe, namespace: Mapping[str, Any]) -> list[str]:
    """The texts of the texts source: the lines of ``text_file`` (blank ones skipped) or a notebook list."""
    if recipe.text_file:
        path = Path(recipe.text_file).expanduser()
        if not path.is_file():
            raise CalibrationDataError(f"The text file {recipe.text_file!r} does not exist"
                                       + (" (it is a folder)." if path.is_dir() else "."))
        texts = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        where = f"The text file {recipe.text_file!r}"
    else:
        value = lookup_variable(namespace, recipe.variable, "texts")
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise CalibrationDataError(f"{recipe.variable!r} is a {type(value).__name__}; give a list of texts "
                                       "(one str per sample).")
        texts = list(value)
        where = f"{recipe.variable!r}"
        wrong = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if wrong is not None:
            raise CalibrationDataError(f"{where} must hold texts (str); item {wrong} is a "
                                       f"{type(texts[wrong]).__name__}.")
    if not texts:
        raise CalibrationDataError(f"{where} holds no text.")
    return texts


def text_encoder(options: TextOptions, input_names: Sequence[str]) -> Callable[[str], Feed]:
    """``text -> feeds`` for a model that is not a zoo model, from a ``tokenizer.json``.

    The tokenizer gives ``input_ids`` and ``attention_mask``; a model taking ``token_type_ids``
    gets zeros (BERT's value for a single segment); outputs the model does not take are dropped.
    """
    if not options.tokenizer:
        raise CalibrationDataError("Give the tokenizer.json of the model (step 2, Preprocessing): texts are tokenized "
                                   "with it (Hugging Face tokenizers).")
    path = Path(options.tokenizer).expanduser()
    if not path.is_file():
        raise CalibrationDataError(f"The tokenizer file {options.tokenizer!r} does not exist; give the model's "
                                   "tokenizer.json.")
    encoder = TextEncoder.from_tokenizer_json(path, options.sequence_length)
    names = list(input_names)

    def encode(text: str) -> Feed:
        feeds = encoder(text)
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        return {name: feeds[name] for name in names if name in feeds}

    return encode


def _sample_preparer(recipe: Recipe, target: ModelTarget) -> Callable[[Any], Feed]:
    """One raw zoo or text sample -> its feed dict, for this source's preprocessing kind."""
    kind = preprocessing_kind(recipe, target)
    if kind == "zoo-model":
        return target.zoo_model.preprocess
    if kind == "tokenizer":
        return text_encoder(recipe.text, target.names)
    name = _single_input(target, "A zoo data set")
    return lambda sample: {name: np.asarray(sample)}


def _texts_pool(recipe: Recipe, target: ModelTarget, namespace: Mapping[str, Any]) -> SamplePool:
    texts = read_texts(recipe, namespace)
    prepare = _sample_preparer(recipe, target)
    return SamplePool(texts, lambda text: [prepare(text)], _labels(recipe, namespace, len(texts)), kind="text")


def _zoo_pools(recipe: Recipe, target: ModelTarget) -> tuple[SamplePool, SamplePool]:
    """The zoo's own calibration and evaluation splits, which never share a sample."""
    prepare = _sample_preparer(recipe, target)
    if _is_pair_dataset(recipe.dataset):
        kind = "pair"

        def prepare_all(pair: Any) -> list[Feed]:
            return [prepare(text) for text in pair]
    else:
        kind = "text" if _is_text_dataset(recipe.dataset) else "image-array"

        def prepare_all(sample: Any) -> list[Feed]:
            return [prepare(sample)]

    pools = []
    for split in ("calibration", "evaluation"):
        data = zoo.load_dataset(recipe.dataset, split=split)
        pools.append(SamplePool(data.samples, prepare_all, np.asarray(data.labels), kind))
    return pools[0], pools[1]


def _single_input(target: ModelTarget, what: str) -> str:
    if len(target.specs) != 1:
        raise CalibrationDataError(
            f"{what} feeds one input, but the model has {len(target.specs)}: "
            + "; ".join(s.describe() for s in target.specs)
            + ". Give feed dicts {input name: array} with the source 'Notebook array or list', or .npz files."
        )
    return target.specs[0].name


def build_data(recipe: Recipe, target: ModelTarget, namespace: Mapping[str, Any] | None = None) -> PreparedData:
    """Prepare the calibration and evaluation feeds the recipe describes and check them.

    ``namespace`` holds the notebook variables the recipe names. Raises (a missing folder, an
    unknown variable, an empty source...); a shape mismatch or a NaN is not raised but listed in
    ``problems``, so that the widget can show it next to the model's inputs. Example::

        data = build_data(Recipe(source="zoo", dataset="digits"), ModelTarget.resolve("resnet_digits"))
        len(data.calibration), data.problems          # 100, []
    """
    missing = recipe.missing()
    if missing:
        raise CalibrationDataError(missing)
    namespace = namespace or {}
    notes: list[str] = []
    if recipe.source == "zoo":
        calibration_pool, evaluation_pool = _zoo_pools(recipe, target)
        n_calibration, n_evaluation = len(calibration_pool.samples), len(evaluation_pool.samples)
        calibration_index = np.arange(min(recipe.calibration_size, n_calibration))
        evaluation_index = np.arange(min(recipe.evaluation_size, n_evaluation))
        unit = "sentence pairs" if calibration_pool.kind == "pair" else "samples"
        available = (f"{recipe.dataset}: {n_calibration} {unit} in its calibration split, {n_evaluation} in its "
                     "evaluation split (the zoo's splits never overlap)")
        if recipe.calibration_size > n_calibration:
            notes.append(f"Asked for {recipe.calibration_size} calibration {unit}; the calibration split of "
                         f"{recipe.dataset} holds {n_calibration}: using {n_calibration}.")
        if recipe.evaluation_size > n_evaluation:
            notes.append(f"Asked for {recipe.evaluation_size} evaluation {unit}; the evaluation split of "
                         f"{recipe.dataset} holds {n_evaluation}: using {n_evaluation}.")
        if calibration_pool.kind == "pair":
            notes.append("Each sentence pair is two model runs: feeds 2i and 2i+1 belong to label i.")
    else:
        if recipe.source == "images":
            pool = _images_pool(recipe, target)
        elif recipe.source == "npy":
            pool = _npy_pool(recipe, target)
        elif recipe.source == "variable":
            pool = _variable_pool(recipe, target, namespace)
        else:
            pool = _texts_pool(recipe, target, namespace)
        calibration_pool = evaluation_pool = pool
        count = len(pool.samples)
        calibration_index, evaluation_index = split_indices(count, recipe.calibration_size, recipe.evaluation_size,
                                                            recipe.seed)
        available = f"the source holds {count} samples"
        if recipe.calibration_size + recipe.evaluation_size > count:
            notes.append(
                f"Asked for {recipe.calibration_size} calibration + {recipe.evaluation_size} evaluation samples; the "
                f"source holds {count}: calibration gets {len(calibration_index)}, evaluation the "
                f"{len(evaluation_index)} left."
            )
    calibration = [feed for i in calibration_index for feed in calibration_pool.prepare(calibration_pool.samples[i])]
    evaluation = [feed for i in evaluation_index for feed in evaluation_pool.prepare(evaluation_pool.samples[i])]
    labels = None if evaluation_pool.labels is None else evaluation_pool.labels[evaluation_index]
    if 0 < len(calibration) < 100:
        notes.append(f"{len(calibration)} calibration samples: 100 to 1000 is typical; fewer give noisier ranges.")
    problems = check_samples(calibration, target.specs, "Calibration")
    problems += check_samples(evaluation, target.specs, "Evaluation")
    if not calibration:
        problems.insert(0, "No calibration samples: the source is empty or the calibration size is 0.")
    preview = [calibration_pool.samples[i] for i in calibration_index[:max(PREVIEW_IMAGES, PREVIEW_TEXTS)]]
    return PreparedData(calibration, evaluation, labels, preview, calibration_pool.kind, available, notes, problems)


# ------------------------------------------------------------------------------------------------
# checks: the quantizer's own messages, before anything runs
# ------------------------------------------------------------------------------------------------


def _check_message(feed: Mapping[str, np.ndarray], specs: Sequence[InputSpec], index: int = 0) -> str:
    try:
        check_feed(feed, specs, index)
    except CalibrationDataError as exc:
        return str(exc)
    return ""


def check_samples(feeds: Sequence[Feed], specs: Sequence[InputSpec], what: str = "Calibration") -> list[str]:
    """:func:`check_feed`'s message for the first failing samples (names, dtypes, shapes, NaN/Inf).

    ``what`` is "Calibration" (the quantizer's exact wording) or "Evaluation" (the same check,
    saying which split the sample is in). Samples failing the same way are counted under the
    first one; at most :data:`MAX_REPORTED` different problems are spelled out.
    """
    # the same problem in many samples (a whole folder laid out NHWC) is one message, with a count
    groups: dict[str, list[tuple[int, str]]] = {}
    for i, feed in enumerate(feeds):
        message = _check_message(feed, specs, i)
        if message:
            groups.setdefault(message.replace(f"Calibration sample {i}", "", 1), []).append((i, message))
    problems = []
    for failing in list(groups.values())[:MAX_REPORTED]:
        message = failing[0][1].replace("Calibration sample", f"{what} sample", 1)
        if len(failing) > 1:
            message += f" (The same for {len(failing) - 1} more {what.lower()} sample(s).)"
        problems.append(message)
    others = sum(len(failing) for failing in list(groups.values())[MAX_REPORTED:])
    if others:
        problems.append(f"... and {others} more {what.lower()} sample(s) with other problems.")
    return problems


@dataclass(frozen=True)
class MappingRow:
    """One line of the mapping table: a model input next to the data array meant for it."""

    #: the model's input name ("" for an array the model does not take)
    input: str
    #: what the model expects, e.g. "float32 [1, 3, 224, 224]"
    expected: str
    #: the name of the data array ("" when the data has none for this input)
    data: str
    #: what the data gives, e.g. "float32 [1, 224, 224, 3]"
    given: str
    #: check_feed's message with its fix ("" when this input fits)
    problem: str = ""


def _dims(shape: Sequence[Any]) -> str:
    return "[" + ", ".join(str(d) if d is not None else "?" for d in shape) + "]"


def mapping_rows(specs: Sequence[InputSpec], feed: Mapping[str, np.ndarray]) -> list[MappingRow]:
    """The model's inputs next to what one prepared sample gives, each with check_feed's verdict.

    Example: a sample laid out NHWC for an NCHW model gives a row whose ``problem`` reads
    "... shape [1, 16, 16, 3], but the model expects [1, 3, 16, 16] ... transpose NHWC <-> NCHW."
    """
    # a name mismatch is one message about the whole feed (with check_feed's rename hint)
    names_problem = _check_message(feed, specs)
    rows = []
    for spec in specs:
        expected = f"{spec.dtype} {_dims(spec.shape)}"
        if spec.name in feed:
            value = np.asarray(feed[spec.name])
            given = f"{value.dtype} {_dims(value.shape)}"
            rows.append(MappingRow(spec.name, expected, spec.name, given,
                                   _check_message({spec.name: feed[spec.name]}, [spec])))
        else:
            rows.append(MappingRow(spec.name, expected, "", "missing", names_problem))
    for name, value in feed.items():
        if name not in {s.name for s in specs}:
            array = np.asarray(value)
            rows.append(MappingRow("", "not an input", name, f"{array.dtype} {_dims(array.shape)}", names_problem))
    return rows


# ------------------------------------------------------------------------------------------------
# the equivalent code
# ------------------------------------------------------------------------------------------------


class _Code:
    """Code lines with their imports gathered at the top (one ``from`` line per module)."""

    def __init__(self) -> None:
        self.modules: dict[str, list[str]] = {}
        self.lines: list[str] = []

    def need(self, module: str, name: str) -> None:
        names = self.modules.setdefault(module, [])
        if name not in names:
            names.append(name)

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def text(self) -> str:
        # the standard library, then ryzen_nb, as isort would order them
        ordered = sorted(self.modules, key=lambda m: (m.startswith("ryzen_nb"), m))
        imports = ["import numpy as np", *(f"from {m} import {', '.join(sorted(self.modules[m]))}" for m in ordered)]
        return "\n".join([*imports, "", *self.lines]) + "\n"


def _feed_code(recipe: Recipe, target: ModelTarget, code: _Code) -> Callable[[str], str]:
    """Adds what turning one sample into its feed needs; returns the feed's expression for a sample expression."""
    kind = preprocessing_kind(recipe, target)
    if kind == "images":
        return lambda sample: f"{{{target.names[0]!r}: images.load({sample})}}"
    if kind == "zoo-model":
        code.need("ryzen_nb", "zoo")
        code.add(f"model = zoo.load_model({target.zoo_name!r})", "")
        return lambda sample: f"model.preprocess({sample})"
    if kind == "tokenizer":
        o = recipe.text
        code.need("ryzen_nb.zoo.preprocessing", "TextEncoder")
        code.add(f"# pads or truncates every text to {o.sequence_length} tokens: the model's inputs are static",
                 f"encoder = TextEncoder.from_tokenizer_json({o.tokenizer!r}, {o.sequence_length})", "", "",
                 "def encode(text: str) -> dict[str, np.ndarray]:",
                 f"    feeds = encoder(text)  # input_ids and attention_mask, int64 [1, {o.sequence_length}]")
        if "token_type_ids" in target.names:
            code.add('    feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])  # one segment: all zeros')
        code.add(f"    return {{name: feeds[name] for name in {target.names!r} if name in feeds}}"
                 "  # the inputs the model takes", "", "")
        return lambda sample: f"encode({sample})"
    if recipe.source == "zoo":
        code.add("# your model is not a zoo model: the samples go in as they are, without preprocessing")
        return lambda sample: f"{{{target.names[0]!r}: np.asarray({sample})}}"
    return lambda sample: sample


def generate_code(recipe: Recipe, target: ModelTarget) -> str:
    """Python code that builds the same ``reader``, ``evaluation_feeds`` and ``evaluation_labels``
    as :func:`build_data`, without the widget. Notebook variables are referred to by name.

    Example::

        namespace = {}
        exec(generate_code(Recipe(source="zoo", dataset="digits"), ModelTarget.resolve("resnet_digits")), namespace)
        namespace["reader"], namespace["evaluation_feeds"], namespace["evaluation_labels"]
    """
    code = _Code()
    code.need("ryzen_nb.calibration.readers", "ArrayReader")
    missing = recipe.missing()
    header = [f"# Calibration and evaluation data for {target.label}, as the CalibrationWizard builds them."]
    if missing:
        header.append(f"# Not ready yet: {missing}")
    o = recipe.image
    if recipe.source == "images":
        code.need("ryzen_nb.calibration.readers", "ImageFolderReader")
        code.add(f"images = ImageFolderReader({recipe.folder!r}, size={o.size!r}, input_name={target.names[0]!r}, "
                 f"resize={o.resize!r},",
                 f"                           normalize={o.normalize!r}, layout={o.layout!r}, grayscale={o.grayscale!r})",
                 "samples = images.files  # the image files, sorted by name")
    elif recipe.source in ("npy", "variable"):
        code.need("ryzen_nb.calibration.readers", "make_reader")
        data = repr(recipe.folder) if recipe.source == "npy" else recipe.variable
        code.add(f"samples = list(make_reader({data}, input_names={target.names!r},",
                 f"                           input_shapes={target.shapes!r}))  # one feed dict per sample")
    elif recipe.source == "texts":
        if recipe.text_file:
            code.need("pathlib", "Path")
            code.add(f"samples = [line for line in Path({recipe.text_file!r}).read_text(encoding='utf-8').splitlines() "
                     "if line.strip()]")
        else:
            code.add(f"samples = list({recipe.variable})  # the texts")
    if recipe.source in ("variable", "texts") and recipe.labels_variable:
        code.add(f"labels = np.asarray({recipe.labels_variable})  # one per sample")
    if recipe.source != "zoo":
        code.add("")
    feed = _feed_code(recipe, target, code)
    c, e = recipe.calibration_size, recipe.evaluation_size
    if recipe.source == "zoo":
        code.need("ryzen_nb", "zoo")
        code.add(f"calibration = zoo.load_dataset({recipe.dataset!r}, split='calibration')",
                 f"evaluation = zoo.load_dataset({recipe.dataset!r}, split='evaluation')  # never overlaps calibration")
        if _is_pair_dataset(recipe.dataset):
            code.add("# each sample is a sentence pair, two model runs: feeds 2i and 2i+1 belong to label i",
                     f"calibration_feeds = [{feed('text')} for pair in calibration.samples[:{c}] for text in pair]",
                     f"evaluation_feeds = [{feed('text')} for pair in evaluation.samples[:{e}] for text in pair]")
        else:
            code.add(f"calibration_feeds = [{feed('sample')} for sample in calibration.samples[:{c}]]",
                     f"evaluation_feeds = [{feed('sample')} for sample in evaluation.samples[:{e}]]")
        code.add(f"evaluation_labels = evaluation.labels[:{e}]")
    else:
        has_labels = recipe.source in ("variable", "texts") and bool(recipe.labels_variable)
        code.add("# a seeded shuffle, then calibration first and evaluation from the rest: the two never overlap",
                 f"order = np.random.default_rng({recipe.seed}).permutation(len(samples))",
                 f"calibration_index, evaluation_index = np.sort(order[:{c}]), np.sort(order[{c}:{c + e}])",
                 f"calibration_feeds = [{feed('samples[i]')} for i in calibration_index]",
                 f"evaluation_feeds = [{feed('samples[i]')} for i in evaluation_index]",
                 "evaluation_labels = " + ("labels[evaluation_index]" if has_labels else "None  # the source has no labels"))
    code.add("", "reader = ArrayReader(calibration_feeds)",
             f'# ryzen_nb.quantize({target.reference()}, "model_xint8.onnx", "XINT8", reader)')
    return "\n".join(header) + "\n" + code.text()


# ------------------------------------------------------------------------------------------------
# preview helpers
# ------------------------------------------------------------------------------------------------


def display_image(sample: Any) -> Any:
    """A PIL image of a raw sample for a thumbnail (a file, or an image-like array), or None.

    Arrays are squeezed of a batch axis and turned from CHW to HWC; those on another scale than
    0..255 (digits' 0..16, normalised tensors) are stretched to it, so that they are visible.
    """
    from PIL import Image

    if isinstance(sample, (str, os.PathLike)):
        with Image.open(sample) as image:
            return image.convert("RGB")
    if isinstance(sample, Mapping):
        sample = next(iter(sample.values()), None)
    array = np.asarray(sample)
    if array.dtype.kind not in "biuf":
        return None
    while array.ndim > 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
        array = array.transpose(1, 2, 0)
    if array.ndim == 3 and array.shape[-1] == 1:
        array = array[..., 0]
    if not (array.ndim == 2 or (array.ndim == 3 and array.shape[-1] == 3)) or min(array.shape[:2]) < 2:
        return None
    if array.dtype != np.uint8 or array.max() < 64:
        finite = np.nan_to_num(array.astype(np.float64))
        low, high = finite.min(), finite.max()
        array = ((finite - low) / (high - low or 1.0) * 255).round().astype(np.uint8)
    return Image.fromarray(array)


def _png_base64(image: Any, height: int = 72) -> str:
    from PIL import Image

    scale = height / image.size[1]
    # small images (8x8 digits) are enlarged without blurring, large ones shrunk smoothly
    resample = Image.Resampling.NEAREST if scale > 1 else Image.Resampling.BILINEAR
    thumb = image.resize((max(1, round(image.size[0] * scale)), height), resample)
    buffer = io.BytesIO()
    thumb.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def thumbnails_html(samples: Sequence[Any], captions: Sequence[str]) -> str:
    """The first images as base64 PNG ``<img>`` tags, each with its caption ("" when none is an image)."""
    cells = []
    for sample, caption in zip(samples[:PREVIEW_IMAGES], captions):
        image = display_image(sample)
        if image is None:
            continue
        cells.append(f'<figure style="display:inline-block;margin:2px 6px;text-align:center">'
                     f'<img src="data:image/png;base64,{_png_base64(image)}" title="{esc(caption)}"/>'
                     f'<figcaption style="font-size:11px;max-width:96px;overflow:hidden">{esc(caption)}'
                     f"</figcaption></figure>")
    return "".join(cells)


def histogram_values(feeds: Sequence[Feed], name: str) -> np.ndarray:
    """The finite values of input ``name`` over ``feeds``, evenly thinned to :data:`HISTOGRAM_VALUES`."""
    arrays = [np.asarray(f[name], dtype=np.float64).reshape(-1) for f in feeds if name in f]
    if not arrays:
        return np.zeros(0)
    values = np.concatenate(arrays)
    values = values[np.isfinite(values)]
    step = max(1, len(values) // HISTOGRAM_VALUES)
    return values[::step]


# ------------------------------------------------------------------------------------------------
# the widget
# ------------------------------------------------------------------------------------------------

_STYLE = {"description_width": "170px"}
_WIDE = w.Layout(width="560px")
_PROBLEM = "color:#b00020"


def _hidden(widget: w.Widget, hidden: bool) -> None:
    widget.layout.display = "none" if hidden else ""


def _step_index(step: int | str) -> int:
    if isinstance(step, str):
        titles = [s.lower() for s in STEPS]
        if step.lower() not in titles:
            raise UnknownNameError("wizard step", step, STEPS)
        return titles.index(step.lower())
    if not 0 <= int(step) < len(STEPS):
        raise ValueError(f"Step {step} does not exist: the wizard has steps 0 to {len(STEPS) - 1} ({', '.join(STEPS)}).")
    return int(step)


class CalibrationWizard:
    """A step-by-step widget building calibration and evaluation data for ``model``.

    Steps: Source, Preprocessing, Mapping (the model's inputs next to what the data gives, with
    the quantizer's own messages), Preview (thumbnails, value or token-count histogram) and Size
    (calibration and held-out evaluation samples, memory). Every control is an attribute, so the
    wizard can be driven without a browser::

        wizard = CalibrationWizard("model.onnx")
        wizard.source.value = "images"
        wizard.folder.value = "calib_images/"
        wizard.calibration_size.value = 200
        wizard.problems                  # [] when the data fits the model
        reader = wizard.reader()         # for ryzen_nb.quantize(model, out, "XINT8", reader)
        feeds, labels = wizard.evaluation()
        print(wizard.code)               # the same data without the widget

    ``model`` is a path, an ``onnx.ModelProto``, a zoo model name ("resnet_digits") or a
    :class:`~ryzen_nb.zoo.ZooModel`. Display ``wizard`` (or ``wizard.widget``) in a notebook.
    """

    def __init__(self, model: Any, *, calibration_size: int = 100, evaluation_size: int = 100, seed: int = 0) -> None:
        # a model that cannot be read is raised here: there is no widget yet to show it in
        self.target = ModelTarget.resolve(model)
        self.errors = ErrorBox()
        #: problems found in the current data, each with its fix (empty when all is well)
        self.problems: list[str] = []
        #: remarks that do not stop anything (sizes capped to what the source holds...)
        self.notes: list[str] = []
        #: the prepared data of the current choices (None until a source is complete and readable)
        self.data: PreparedData | None = None
        self.step = 0
        self._given: dict[str, Any] = {}
        self._holding = 0
        self._make_controls(calibration_size, evaluation_size, seed)
        self.widget = self._make_layout()
        for control in self._controls:
            control.observe(self._on_change, names="value")
        self._show_step()
        self.refresh()

    # -- controls ----------------------------------------------------------------------------------
    def _make_controls(self, calibration_size: int, evaluation_size: int, seed: int) -> None:
        target = self.target
        image, text = target.image_defaults(), target.text_defaults()
        datasets = zoo.list_datasets()
        # step 1: source
        self.source = w.Dropdown(options=[(label, key) for key, label in SOURCES.items()],
                                 value=target.default_source(), description="Source", style=_STYLE, layout=_WIDE)
        self.folder = w.Text(description="Folder", placeholder="calibration_images/", continuous_update=False,
                             style=_STYLE, layout=_WIDE)
        self.variable = w.Text(description="Notebook variable", placeholder="x_calib", continuous_update=False,
                               style=_STYLE, layout=_WIDE)
        self.labels_variable = w.Text(description="Labels variable (optional)", placeholder="y_calib",
                                      continuous_update=False, style=_STYLE, layout=_WIDE)
        self.dataset = w.Dropdown(options=[(f"{name} ({row.task}, {row.needs})", name) for name, row in datasets.iterrows()],
                                  value=target.default_dataset(), description="Zoo data set", style=_STYLE,
                                  layout=_WIDE)
        self.text_file = w.Text(description="Text file (.txt)", placeholder="texts.txt: one text per line",
                                continuous_update=False, style=_STYLE, layout=_WIDE)
        self.source_help = w.HTML()
        # step 2: preprocessing
        self.image_height = w.BoundedIntText(value=image.size[0], min=1, max=16384, description="Crop height (px)",
                                             style=_STYLE)
        self.image_width = w.BoundedIntText(value=image.size[1], min=1, max=16384, description="Crop width (px)",
                                            style=_STYLE)
        self.resize = w.BoundedIntText(value=0, min=0, max=65536, description="Resize shorter side (px)", style=_STYLE,
                                       tooltip="0: crop size / 0.875 (the ImageNet convention, 256 for 224)")
        self.normalize = w.Dropdown(options=NORMALIZATIONS, value=image.normalize, description="Normalisation",
                                    style=_STYLE)
        self.layout = w.Dropdown(options=LAYOUTS, value=image.layout, description="Layout", style=_STYLE)
        self.grayscale = w.Checkbox(value=image.grayscale, description="Grayscale (1 channel)", indent=False)
        self.tokenizer = w.Text(value=text.tokenizer, description="tokenizer.json", placeholder="path/to/tokenizer.json",
                                continuous_update=False, style=_STYLE, layout=_WIDE)
        self.sequence_length = w.BoundedIntText(value=text.sequence_length, min=1, max=65536,
                                                description="Sequence length (tokens)", style=_STYLE)
        self.preprocessing_help = w.HTML()
        # step 5: size
        self.calibration_size = w.BoundedIntText(value=calibration_size, min=1, max=10_000_000,
                                                 description="Calibration (samples)", style=_STYLE)
        self.evaluation_size = w.BoundedIntText(value=evaluation_size, min=0, max=10_000_000,
                                                description="Evaluation (samples)", style=_STYLE)
        self.seed = w.BoundedIntText(value=seed, min=0, max=2**31 - 1, description="Split seed", style=_STYLE)
        self._controls = [self.source, self.folder, self.variable, self.labels_variable, self.dataset, self.text_file,
                          self.image_height, self.image_width, self.resize, self.normalize, self.layout, self.grayscale,
                          self.tokenizer, self.sequence_length, self.calibration_size, self.evaluation_size, self.seed]
        # outputs
        self.mapping_html = w.HTML()
        self.thumbnails_html = w.HTML()
        self.texts_html = w.HTML()
        self.histogram = self._make_histogram()
        self.size_html = w.HTML()
        self.problems_html = w.HTML()
        self.code_html = w.HTML()

    @staticmethod
    def _make_histogram() -> Any:
        from plotly.graph_objects import FigureWidget, Histogram

        figure = FigureWidget(data=[Histogram(x=[], nbinsx=60, marker_color="#4c78a8")])
        figure.update_layout(height=220, width=480, margin={"l": 45, "r": 10, "t": 30, "b": 35},
                             title={"text": "", "font": {"size": 12}}, bargap=0.02)
        return figure

    def _make_layout(self) -> w.VBox:
        self.step_buttons = [w.Button(description=f"{i + 1}. {title}", layout=w.Layout(width="130px"))
                             for i, title in enumerate(STEPS)]
        for button in self.step_buttons:
            button.on_click(self._on_step_click)
        self.back_button = w.Button(description="Back", icon="arrow-left")
        self.next_button = w.Button(description="Next", icon="arrow-right")
        self.back_button.on_click(self._on_back)
        self.next_button.on_click(self._on_next)
        self.step_label = w.HTML()
        self.image_box = w.VBox([self.image_height, self.image_width, self.resize, self.normalize, self.layout,
                                 self.grayscale])
        self.text_box = w.VBox([self.tokenizer, self.sequence_length])
        pages = [
            w.VBox([self.source, self.folder, self.variable, self.labels_variable, self.dataset, self.text_file,
                    self.source_help]),
            w.VBox([self.preprocessing_help, self.image_box, self.text_box]),
            w.VBox([w.HTML("<b>The model's inputs and what the first prepared sample gives</b> "
                           "(checked before anything runs)"), self.mapping_html]),
            w.VBox([self.thumbnails_html, self.histogram, self.texts_html]),
            w.VBox([self.calibration_size, self.evaluation_size, self.seed, self.size_html]),
        ]
        self.pages = w.Stack(pages, selected_index=0)
        title = w.HTML(f"<b>Calibration data for {esc(self.target.label)}</b>")
        code_title = w.HTML("<b>Equivalent Python code</b> (the same data without the widget)")
        box = w.VBox([title, w.HBox(self.step_buttons), self.step_label, self.pages,
                      w.HBox([self.back_button, self.next_button]), self.problems_html, self.errors, code_title,
                      self.code_html])
        box.add_class("rnb-calibration-wizard")
        return box

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # -- the data ------------------------------------------------------------------------------------
    def recipe(self) -> Recipe:
        """The current choices as a :class:`Recipe`."""
        return Recipe(
            source=self.source.value,
            folder=self.folder.value.strip(),
            variable=self.variable.value.strip(),
            labels_variable=self.labels_variable.value.strip(),
            dataset=self.dataset.value or "",
            text_file=self.text_file.value.strip(),
            image=ImageOptions(size=(self.image_height.value, self.image_width.value), resize=self.resize.value or None,
                               normalize=self.normalize.value, layout=self.layout.value,
                               grayscale=self.grayscale.value),
            text=TextOptions(tokenizer=self.tokenizer.value.strip(), sequence_length=self.sequence_length.value),
            calibration_size=self.calibration_size.value,
            evaluation_size=self.evaluation_size.value,
            seed=self.seed.value,
        )

    @property
    def code(self) -> str:
        """Python code building the same reader and evaluation data without the widget."""
        return generate_code(self.recipe(), self.target)

    def namespace(self) -> dict[str, Any]:
        """The variables the wizard can read: the notebook's (IPython user namespace) and those of set_data."""
        names: dict[str, Any] = {}
        try:
            from IPython import get_ipython
        except ImportError:  # pragma: no cover - IPython comes with ipywidgets
            get_ipython = None
        shell = get_ipython() if get_ipython is not None else None
        if shell is not None:
            names.update(shell.user_ns)
        names.update(self._given)
        return names

    @surfaces_errors("calibration data")
    def set_data(self, data: Any, name: str = "data", labels: Any = None) -> None:
        """Use ``data`` (an array, a list of arrays or feed dicts, or a list of texts) as the source.

        The generated code refers to it as ``name`` (a notebook variable of that name, typically);
        ``labels`` (one per sample) become the evaluation labels. Example::

            wizard.set_data(x_calib, name="x_calib", labels=y_calib)
        """
        if not name.isidentifier() or keyword.iskeyword(name):
            raise CalibrationDataError(f"name={name!r} must be a Python variable name: the code refers to the data by it.")
        texts = isinstance(data, (list, tuple)) and bool(data) and all(isinstance(t, str) for t in data)
        self._given[name] = data
        with self._batch():
            if labels is not None:
                self._given[f"{name}_labels"] = labels
            self.labels_variable.value = f"{name}_labels" if labels is not None else ""
            self.source.value = "texts" if texts else "variable"
            self.text_file.value = ""
            self.variable.value = name

    @surfaces_errors("calibration data")
    def refresh(self) -> None:
        """Rebuild the data from the current choices (done on every change; call it after changing a
        notebook variable the wizard reads)."""
        self._rebuild()

    @contextlib.contextmanager
    def _batch(self) -> Iterator[None]:
        """Change several controls with one rebuild at the end."""
        self._holding += 1
        try:
            yield
        finally:
            self._holding -= 1
        self._rebuild()

    def _rebuild(self) -> None:
        if self._holding:
            return
        recipe = self.recipe()
        self._show_controls(recipe)
        self.code_html.value = ('<pre style="font-size:12px;background:#f6f8fa;padding:8px;overflow:auto">'
                                f"{esc(generate_code(recipe, self.target))}</pre>")
        self.data, self.notes = None, []
        missing = recipe.missing()
        if missing:
            self.problems = [missing]
            self._render()
            return
        try:
            self.data = build_data(recipe, self.target, self.namespace())
        except Exception as exc:
            self.problems = [str(exc)]
            self._render()
            raise  # shown in the ErrorBox by the decorated caller
        self.problems, self.notes = list(self.data.problems), list(self.data.notes)
        self._render()

    def _ready(self) -> PreparedData:
        if self.data is None or self.problems:
            raise CalibrationDataError("The calibration data is not ready: " + " ".join(self.problems))
        return self.data

    def reader(self) -> CalibrationReader:
        """A reader over the calibration samples, for ``ryzen_nb.quantize(model, out, "XINT8", reader)``.

        Raises :class:`~ryzen_nb.errors.CalibrationDataError` listing the problems while there are any.
        """
        return ArrayReader(list(self._ready().calibration)).bind(self.target.names)

    def evaluation(self) -> tuple[list[Feed], np.ndarray | None]:
        """The held-out feeds (never used for calibration) and their labels (None when the source has none)."""
        data = self._ready()
        labels = None if data.evaluation_labels is None else data.evaluation_labels.copy()
        return list(data.evaluation), labels

    # -- showing -------------------------------------------------------------------------------------
    def _show_controls(self, recipe: Recipe) -> None:
        source = recipe.source
        _hidden(self.folder, source not in ("images", "npy"))
        _hidden(self.variable, source not in ("variable", "texts"))
        _hidden(self.labels_variable, source not in ("variable", "texts"))
        _hidden(self.dataset, source != "zoo")
        _hidden(self.text_file, source != "texts")
        self.source_help.value = _SOURCE_HELP[source]
        kind = preprocessing_kind(recipe, self.target)
        _hidden(self.image_box, kind != "images")
        _hidden(self.text_box, kind != "tokenizer")
        self.preprocessing_help.value = self._preprocessing_text(recipe, kind)

    def _preprocessing_text(self, recipe: Recipe, kind: str) -> str:
        o = recipe.image
        if kind == "images":
            short = o.resize or f"{round(min(o.size) / 0.875)} (crop / 0.875)"
            return (f"Each image: shorter side resized to {esc(short)} px, centre crop {o.size[0]} x {o.size[1]}, "
                    f"normalisation <code>{esc(o.normalize)}</code>, layout {esc(o.layout)}, batch axis of 1 "
                    "(as <code>ImageFolderReader</code> does). Size and layout come from the model's input shape "
                    f"{esc(_dims(self.target.specs[0].shape))}.")
        if kind == "zoo-model":
            return (f"Samples go through the zoo model's own preprocessing, <code>model.preprocess(sample)</code> "
                    f"({esc(self.target.zoo_name)}: the tokenizer or image pipeline it was trained with).")
        if kind == "tokenizer":
            return ("Texts are tokenized with the model's <code>tokenizer.json</code> (Hugging Face tokenizers), padded "
                    "or truncated to the sequence length; <code>input_ids</code> and <code>attention_mask</code> "
                    "(and zeros for <code>token_type_ids</code> if the model takes it).")
        if recipe.source == "zoo":
            return ("Your model is not a zoo model: the zoo samples go in as they are (no preprocessing). If the "
                    "Mapping step shows a mismatch, preprocess them in the notebook and use the source "
                    "'Notebook array or list'.")
        return ("The arrays go in as they are: an array is split along axis 0 into samples of the model's batch "
                "size (a missing batch axis is added), float64 becomes float32. Preprocess them in the notebook if "
                "the Mapping step shows a mismatch.")

    def _render(self) -> None:
        data = self.data
        self._render_problems()
        first = data.calibration[0] if data is not None and data.calibration else None
        self.mapping_html.value = self._mapping_table(first)
        self._render_preview(data)
        self._render_size(data)

    def _render_problems(self) -> None:
        items = [f'<li style="{_PROBLEM}">{esc(p)}</li>' for p in self.problems]
        items += [f'<li style="color:#555">{esc(n)}</li>' for n in self.notes]
        self.problems_html.value = f'<ul style="margin:4px 0">{"".join(items)}</ul>' if items else ""

    def _mapping_table(self, feed: Feed | None) -> str:
        if feed is None:
            rows = [MappingRow(s.name, f"{s.dtype} {_dims(s.shape)}", "", "no data yet") for s in self.target.specs]
        else:
            rows = mapping_rows(self.target.specs, feed)
        head = "".join(f"<th style='text-align:left;padding:2px 8px'>{h}</th>"
                       for h in ("Model input", "expects", "Data", "gives", ""))
        body = []
        for row in rows:
            if feed is None:
                status, style = "", ""
            elif row.problem:
                status, style = f"✗ {esc(row.problem)}", _PROBLEM
            else:
                status, style = "✓ fits", "color:#1a7f37"
            cells = [row.input or "—", row.expected, row.data or "—", row.given]
            body.append(f"<tr style='{style}'>" + "".join(f"<td style='padding:2px 8px'>{esc(c)}</td>" for c in cells)
                        + f"<td style='padding:2px 8px;white-space:normal;max-width:520px'>{status}</td></tr>")
        return f"<table class='rnb-table'><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"

    def _render_preview(self, data: PreparedData | None) -> None:
        self.thumbnails_html.value = self.texts_html.value = ""
        counts = data.token_counts() if data is not None else None
        values: Any = []
        title = ""
        if data is not None and data.calibration:
            if counts is not None:
                values, title = counts, "Tokens per calibration text (padding excluded)"
            else:
                name = self.target.names[0]
                values = histogram_values(data.calibration, name)
                title = f"Values of input {name} over the calibration samples"
        # one assignment per property: inside batch_update a second one to the same property is lost
        with self.histogram.batch_update():
            self.histogram.data[0].x = values
            self.histogram.layout.title.text = title
        if data is None or not data.calibration:
            return
        if data.kind in ("image-file", "image-array", "array"):
            captions = [Path(s).name if data.kind == "image-file" else f"sample {i}" for i, s in enumerate(data.preview)]
            self.thumbnails_html.value = thumbnails_html(data.preview, captions)
        elif counts is not None:
            self.texts_html.value = self._texts_table(data, counts)

    def _texts_table(self, data: PreparedData, counts: list[int]) -> str:
        texts = [t for sample in data.preview for t in (sample if data.kind == "pair" else [sample])]
        length = max((f.get("input_ids", np.zeros((1, 0))).shape[-1] for f in data.calibration[:1]), default=0)
        rows = "".join(f"<tr><td style='padding:2px 8px'>{n}</td><td style='padding:2px 8px'>{esc(t)}</td></tr>"
                       for t, n in zip(texts[:PREVIEW_TEXTS], counts))
        full = sum(1 for n in counts if n >= length > 0)
        note = (f"<p style='{_PROBLEM}'>{full} of {len(counts)} texts fill all {length} tokens: they are probably "
                "truncated.</p>" if full else "")
        return (f"<table class='rnb-table'><thead><tr><th>tokens</th><th>text</th></tr></thead><tbody>{rows}"
                f"</tbody></table>{note}")

    def _render_size(self, data: PreparedData | None) -> None:
        if data is None:
            self.size_html.value = "<p>No data yet.</p>"
            return
        megabytes = data.calibration_megabytes
        memory = "< 0.01 MB" if megabytes < 0.01 else f"≈ {megabytes:.2f} MB"
        labels = "with labels" if data.evaluation_labels is not None else "without labels"
        self.size_html.value = (
            f"<ul><li>Calibration: <b>{len(data.calibration)} samples</b> (model runs), {memory} of prepared "
            f"tensors in memory</li><li>Evaluation: <b>{len(data.evaluation)} samples</b>, {labels}, held out: "
            f"never used for calibration</li><li>Source: {esc(data.available)}</li></ul>"
        )

    # -- navigation ----------------------------------------------------------------------------------
    def _show_step(self) -> None:
        self.pages.selected_index = self.step
        for index, button in enumerate(self.step_buttons):
            button.button_style = "primary" if index == self.step else ""
        self.step_label.value = f"Step {self.step + 1} of {len(STEPS)}: <b>{STEPS[self.step]}</b>"
        self.back_button.disabled = self.step == 0
        self.next_button.disabled = self.step == len(STEPS) - 1

    @surfaces_errors("navigation")
    def go(self, step: int | str) -> None:
        """Show step ``step``: its index (0 = Source ... 4 = Size) or its title ("mapping")."""
        self.step = _step_index(step)
        self._show_step()

    def next(self) -> None:
        """Show the next step."""
        self.go(min(self.step + 1, len(STEPS) - 1))

    def back(self) -> None:
        """Show the previous step."""
        self.go(max(self.step - 1, 0))

    # -- callbacks -----------------------------------------------------------------------------------
    @surfaces_errors("calibration data")
    def _on_change(self, change: dict[str, Any]) -> None:
        self._rebuild()

    @surfaces_errors("navigation")
    def _on_step_click(self, button: w.Button) -> None:
        self.go(self.step_buttons.index(button))

    @surfaces_errors("navigation")
    def _on_back(self, button: w.Button) -> None:
        self.back()

    @surfaces_errors("navigation")
    def _on_next(self, button: w.Button) -> None:
        self.next()


_SOURCE_HELP = {
    "images": "Images (" + ", ".join(IMAGE_SUFFIXES) + ") read with Pillow, in file-name order, then split at random "
              "(seeded) into calibration and evaluation.",
    "npy": "One .npy file per sample (a single-input model) or .npz files holding one array per input name, or one "
           "sub-folder of .npy files per input (Quark's layout).",
    "variable": "The name of a notebook variable: a numpy array (split along axis 0 into samples), a list of arrays, "
                "or a list of feed dicts {input name: array}. Or call <code>wizard.set_data(x)</code>.",
    "zoo": "A data set of <code>ryzen_nb.zoo</code>: its own calibration and evaluation splits, which never overlap.",
    "texts": "A .txt file (one text per line) or the name of a notebook list of str. The file is used when given.",
}
