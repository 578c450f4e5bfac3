"""Where a calibration recipe's samples come from, how one becomes its feeds, and the disjoint split.

Each source gives a :class:`SamplePool`: the raw samples (image files, arrays, texts, zoo
samples), a function turning one into its feed dicts, and labels when the source has them.
:func:`split_indices` then draws the calibration and held-out evaluation samples, which never
overlap. Example::

    pool = image_folder_pool("calib/", ImageOptions(size=(224, 224)), target)
    calibration, evaluation = split_indices(len(pool.samples), 100, 50, seed=0)
    feeds = [feed for i in calibration for feed in pool.prepare(pool.samples[i])]

Part of :mod:`ryzen_nb.calibration.recipe`, whose :class:`~ryzen_nb.calibration.recipe.Recipe`
picks the source and calls these functions.
"""

from __future__ import annotations

import difflib
import keyword
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb import zoo
from ryzen_nb.calibration.readers import IMAGE_SUFFIXES, ImageFolderReader, make_reader
from ryzen_nb.calibration.recipe_target import ImageOptions, ModelTarget, TextOptions, dims
from ryzen_nb.errors import CalibrationDataError
from ryzen_nb.zoo.datasets import DATASETS
from ryzen_nb.zoo.preprocessing import TextEncoder

__all__ = [
    "SOURCES",
    "SamplePool",
    "image_folder_pool",
    "is_pair_dataset",
    "is_text_dataset",
    "labels_of",
    "lookup_variable",
    "npy_folder_pool",
    "preprocessing_kind",
    "read_texts",
    "sample_preparer",
    "split_indices",
    "text_encoder",
    "texts_pool",
    "variable_pool",
    "zoo_pools",
]

Feed = dict[str, np.ndarray]

#: where calibration data can come from: key -> what the wizard's Source step calls it
SOURCES = {
    "images": "Folder of images",
    "npy": "Folder of .npy / .npz files",
    "variable": "Notebook array or list",
    "zoo": "Zoo data set",
    "texts": "Texts (notebook list or .txt file)",
}


@dataclass
class SamplePool:
    """The samples of a source before the split, and how one becomes its feeds."""

    samples: Sequence[Any]
    #: one raw sample -> its feed dicts (one, or two for a sentence pair)
    prepare: Callable[[Any], list[Feed]]
    labels: np.ndarray | None = None
    #: what a raw sample is, for the preview: "image-file", "image-array", "array", "text" or "pair"
    kind: str = "array"


def split_indices(count: int, calibration: int, evaluation: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint calibration and evaluation indices into ``range(count)``, from a seeded shuffle.

    The shuffle keeps a folder sorted by class (``cat_001.jpg``... ``dog_001.jpg``) from giving a
    calibration set of cats only. Calibration is served first; evaluation gets what is left, up to
    its size. Example: ``split_indices(10, 4, 3)`` -> 4 and 3 sorted indices, none shared.
    """
    order = np.random.default_rng(seed).permutation(count)
    return np.sort(order[:calibration]), np.sort(order[calibration : calibration + evaluation])


def lookup_variable(variables: Mapping[str, Any], name: str, what: str = "data") -> Any:
    """The value of variable ``name`` (a notebook's, or given to ``Recipe.build``), or an error
    naming the closest variables."""
    if not name.isidentifier() or keyword.iskeyword(name):
        raise CalibrationDataError(f"{name!r} is not a Python variable name; give the name of the variable "
                                   f"holding the {what} (e.g. x_calib).")
    if name not in variables:
        close = difflib.get_close_matches(name, [k for k in variables if not k.startswith("_")], n=1)
        guess = f" Did you mean {close[0]!r}?" if close else ""
        raise CalibrationDataError(
            f"There is no variable {name!r} in the notebook.{guess} Define it in a cell first "
            f"(e.g. {name} = np.load('calibration.npy')) or give the {what} with wizard.set_data(...); "
            f"in a script, pass it: recipe.build(model, variables={{{name!r}: {name}}})."
        )
    return variables[name]


def is_text_dataset(name: str) -> bool:
    """Whether the zoo data set ``name`` holds texts (tokenized for the model) rather than images."""
    return name in DATASETS and DATASETS[name].task != "image-classification"


def is_pair_dataset(name: str) -> bool:
    """Whether the zoo data set ``name`` holds sentence pairs (each sample is two model runs)."""
    return name in DATASETS and DATASETS[name].task == "sentence-similarity"


def preprocessing_kind(source: str, dataset: str, target: ModelTarget) -> str:
    """How samples of ``source`` become feeds for this model:

    * ``"images"``: :class:`ImageFolderReader` (resize, centre crop, normalise, layout);
    * ``"zoo-model"``: the zoo model's own ``preprocess`` (zoo data, or texts for a zoo text model);
    * ``"tokenizer"``: a ``tokenizer.json`` at a fixed sequence length (texts for any other model);
    * ``"as-is"``: arrays go in unchanged (float64 becomes float32).
    """
    if source == "images":
        return "images"
    if source == "texts":
        return "zoo-model" if target.zoo_model is not None and target.is_text else "tokenizer"
    if source == "zoo":
        if target.zoo_model is not None:
            return "zoo-model"
        return "tokenizer" if is_text_dataset(dataset) else "as-is"
    return "as-is"


def text_encoder(options: TextOptions, input_names: Sequence[str]) -> Callable[[str], Feed]:
    """``text -> feeds`` for a model that is not a zoo model, from a ``tokenizer.json``.

    The tokenizer gives ``input_ids`` and ``attention_mask``; a model taking ``token_type_ids``
    gets zeros (BERT's value for a single segment); outputs the model does not take are dropped.
    """
    if not options.tokenizer:
        raise CalibrationDataError("Give the model's tokenizer.json: texts are tokenized with it (Hugging Face "
                                   "tokenizers). In a script: TextOptions(tokenizer='path/to/tokenizer.json'); in "
                                   "the wizard: step 2, Preprocessing.")
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


def sample_preparer(kind: str, text: TextOptions, target: ModelTarget) -> Callable[[Any], Feed]:
    """One raw zoo sample or text -> its feed dict, for a :func:`preprocessing_kind` other than "images"."""
    if kind == "zoo-model":
        return target.zoo_model.preprocess
    if kind == "tokenizer":
        return text_encoder(text, target.names)
    name = target.single_input("A zoo data set")
    return lambda sample: {name: np.asarray(sample)}


# ------------------------------------------------------------------------------------------------
# the sources
# ------------------------------------------------------------------------------------------------


def image_folder_pool(folder: str, options: ImageOptions, target: ModelTarget) -> SamplePool:
    """The images of ``folder`` (sorted by name), each read, cropped and normalised by ImageFolderReader."""
    name = target.single_input("An image folder")
    images = ImageFolderReader(folder, size=options.size, input_name=name, resize=options.resize,
                               normalize=options.normalize, layout=options.layout, grayscale=options.grayscale)
    return SamplePool(images.files, lambda path: [{name: images.load(path)}], kind="image-file")


def npy_folder_pool(folder: str, target: ModelTarget) -> SamplePool:
    """The .npy / .npz files of ``folder`` (or one sub-folder of .npy files per input), as feed dicts."""
    path = Path(folder).expanduser()
    # make_reader picks the image reader as soon as one image is in the folder: say so instead
    if path.is_dir() and any(p.suffix.lower() in IMAGE_SUFFIXES for p in path.iterdir()):
        raise CalibrationDataError(f"{folder!r} holds images; choose the source 'images' (a folder of images), "
                                   "or move the images out of the .npy folder.")
    samples = list(make_reader(folder, input_names=target.names, input_shapes=target.shapes))
    return SamplePool(samples, lambda feed: [feed], kind="array")


def variable_pool(name: str, labels_name: str, target: ModelTarget, variables: Mapping[str, Any]) -> SamplePool:
    """The samples of variable ``name``: an array (split along axis 0), a list of arrays or of feed dicts."""
    data = lookup_variable(variables, name)
    if isinstance(data, (list, tuple)) and data and all(isinstance(t, str) for t in data):
        raise CalibrationDataError(f"{name!r} is a list of texts; choose the source 'texts' (they are tokenized "
                                   "there).")
    if isinstance(data, Iterator):
        # the wizard reads its source again on every change: a generator would be empty the second time
        raise CalibrationDataError(f"{name!r} is an iterator (a generator?), which can be read only once; "
                                   f"make it a list first: {name} = list({name}).")
    samples = list(make_reader(data, input_names=target.names, input_shapes=target.shapes))
    # a count mismatch often means the array was split wrongly (an axis short: read as one sample)
    read_as = ""
    if samples and isinstance(samples[0], Mapping):
        given = ", ".join(f"{key!r} {dims(np.shape(value))}" for key, value in samples[0].items())
        read_as = f" (each read as {given}; the model takes {', '.join(dims(s.shape) for s in target.specs)})"
    labels = labels_of(labels_name, variables, len(samples), read_as)
    return SamplePool(samples, lambda feed: [feed], labels, kind="array")


def labels_of(labels_name: str, variables: Mapping[str, Any], count: int, read_as: str = "") -> np.ndarray | None:
    """The labels held by variable ``labels_name`` (one per sample), or None when no name is given."""
    if not labels_name:
        return None
    labels = np.asarray(lookup_variable(variables, labels_name, "labels"))
    if labels.ndim == 0 or len(labels) != count:
        raise CalibrationDataError(
            f"{labels_name!r} holds {labels.size} label(s) but the source gives {count} samples{read_as}; "
            "give one label per sample, in the same order."
        )
    return labels


def read_texts(text_file: str, name: str, variables: Mapping[str, Any]) -> list[str]:
    """The lines of ``text_file`` (blank ones skipped) when given, else the list of str in variable ``name``."""
    if text_file:
        path = Path(text_file).expanduser()
        if not path.is_file():
            raise CalibrationDataError(f"The text file {text_file!r} does not exist"
                                       + (" (it is a folder)." if path.is_dir() else "."))
        texts = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        where = f"The text file {text_file!r}"
    else:
        value = lookup_variable(variables, name, "texts")
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise CalibrationDataError(f"{name!r} is a {type(value).__name__}; give a list of texts "
                                       "(one str per sample).")
        texts = list(value)
        where = f"{name!r}"
        wrong = next((i for i, t in enumerate(texts) if not isinstance(t, str)), None)
        if wrong is not None:
            raise CalibrationDataError(f"{where} must hold texts (str); item {wrong} is a "
                                       f"{type(texts[wrong]).__name__}.")
    if not texts:
        raise CalibrationDataError(f"{where} holds no text.")
    return texts


def texts_pool(texts: list[str], prepare: Callable[[str], Feed], labels: np.ndarray | None) -> SamplePool:
    """Texts, each one model run."""
    return SamplePool(texts, lambda text: [prepare(text)], labels, kind="text")


def zoo_pools(dataset: str, prepare: Callable[[Any], Feed]) -> tuple[SamplePool, SamplePool]:
    """The zoo's own calibration and evaluation splits of ``dataset``, which never share a sample."""
    if is_pair_dataset(dataset):
        kind = "pair"

        def prepare_all(pair: Any) -> list[Feed]:
            return [prepare(text) for text in pair]
    else:
        kind = "text" if is_text_dataset(dataset) else "image-array"

        def prepare_all(sample: Any) -> list[Feed]:
            return [prepare(sample)]

    pools = []
    for split in ("calibration", "evaluation"):
        data = zoo.load_dataset(dataset, split=split)
        pools.append(SamplePool(data.samples, prepare_all, np.asarray(data.labels), kind))
    return pools[0], pools[1]
