"""The model a calibration recipe is for: its inputs, the preprocessing they imply, and the checks
of prepared samples against them.

Example::

    target = ModelTarget.resolve("resnet_digits")     # or a path, an onnx.ModelProto, a ZooModel
    target.names, target.shapes                       # ['image'], {'image': [1, 1, 8, 8]}
    target.image_defaults()                           # ImageOptions(size=(8, 8), layout='NCHW', grayscale=True)
    check_samples(feeds, target.specs)                # [] or the quantizer's messages, with the fix
    mapping_rows(target.specs, feeds[0])              # each input next to what the sample gives

Part of :mod:`ryzen_nb.calibration.recipe` (which builds on this module and re-exports its names).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb import zoo
from ryzen_nb.calibration.validation import check_feed
from ryzen_nb.errors import CalibrationDataError, UnknownNameError
from ryzen_nb.graph.io import load_model
from ryzen_nb.graph.prepare import InputSpec, input_specs
from ryzen_nb.zoo.models import MODELS

__all__ = [
    "DATASET_FOR_MODEL",
    "LAYOUTS",
    "MAX_REPORTED",
    "NORMALIZATIONS",
    "ImageOptions",
    "MappingRow",
    "ModelTarget",
    "TextOptions",
    "check_samples",
    "dims",
    "mapping_rows",
]

Feed = dict[str, np.ndarray]

#: the normalisations of :class:`~ryzen_nb.calibration.readers.ImageFolderReader`
NORMALIZATIONS = ("imagenet", "minus127_div128", "unit", "none")
LAYOUTS = ("NCHW", "NHWC")
#: how many different problems :func:`check_samples` spells out (further ones are counted): a folder
#: of 500 wrongly shaped files gives one clear message, not 500
MAX_REPORTED = 3
#: the zoo data set each zoo model is evaluated on (a recipe's default for that model)
DATASET_FOR_MODEL = {
    "resnet_digits": "digits",
    "efficientnet_lite0": "imagenet_samples",
    "resnet50": "imagenet_samples",
    "minilm_l6": "sentences",
    "gte": "sentences",
    "minilm_sentiment": "rotten_tomatoes",
    "distilbert_sst2": "rotten_tomatoes",
}


@dataclass(frozen=True)
class ImageOptions:
    """How images become tensors (passed as is to :class:`~ryzen_nb.calibration.readers.ImageFolderReader`).

    The shorter side is resized to ``resize`` (None: the crop size / 0.875, the ImageNet
    convention), the centre ``size`` (height, width; an int for a square) is cropped, then
    normalised (one of :data:`NORMALIZATIONS`) and laid out (``"NCHW"`` or ``"NHWC"``). Example::

        ImageOptions(size=224, normalize="minus127_div128", layout="NHWC")
    """

    size: tuple[int, int] = (224, 224)
    resize: int | None = None
    normalize: str = "imagenet"
    layout: str = "NCHW"
    grayscale: bool = False

    def __post_init__(self) -> None:
        # checked here, where the recipe is written, rather than when the first image is read
        size = (self.size, self.size) if isinstance(self.size, (int, np.integer)) else tuple(self.size)
        if len(size) != 2 or not all(isinstance(d, (int, np.integer)) and d > 0 for d in size):
            raise CalibrationDataError(f"ImageOptions(size={self.size!r}): give the crop size as (height, width) in "
                                       "pixels, or one int for a square, e.g. size=(224, 224).")
        if self.resize is not None and (not isinstance(self.resize, (int, np.integer)) or self.resize < 1):
            raise CalibrationDataError(f"ImageOptions(resize={self.resize!r}): give the shorter side in pixels "
                                       "(a positive int), or None for the crop size / 0.875.")
        if self.normalize not in NORMALIZATIONS:
            raise UnknownNameError("image normalisation", self.normalize, NORMALIZATIONS)
        if str(self.layout).upper() not in LAYOUTS:
            raise UnknownNameError("image layout", self.layout, LAYOUTS)
        object.__setattr__(self, "size", (int(size[0]), int(size[1])))
        object.__setattr__(self, "layout", str(self.layout).upper())


@dataclass(frozen=True)
class TextOptions:
    """How texts become token ids for a model that is not a zoo model: a ``tokenizer.json`` file
    (Hugging Face ``tokenizers``) and the fixed sequence length of the model's inputs. Example::

        TextOptions(tokenizer="my_bert/tokenizer.json", sequence_length=128)
    """

    tokenizer: str = ""
    sequence_length: int = 128

    def __post_init__(self) -> None:
        object.__setattr__(self, "tokenizer", str(self.tokenizer))  # a Path is welcome
        if not isinstance(self.sequence_length, (int, np.integer)) or self.sequence_length < 1:
            raise CalibrationDataError(f"TextOptions(sequence_length={self.sequence_length!r}): give the number of "
                                       "tokens of the model's input_ids (a positive int, e.g. 128).")


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
        """A target from a path, an ``onnx.ModelProto``, bytes, a zoo model name, a ``ZooModel``,
        or a ModelTarget (returned as is: resolve once, build many times)."""
        if isinstance(model, ModelTarget):
            return model
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

    def image_input(self) -> ImageOptions | None:
        """Crop size, layout and channels read from a static 4-D input shape (N, C, H, W or N, H, W, C),
        or None when the first input does not look like an image."""
        shape = self.specs[0].shape if self.specs else ()
        if len(shape) == 4:
            if shape[1] in (1, 3) and all(isinstance(d, int) for d in shape[2:]):
                return ImageOptions(size=(int(shape[2]), int(shape[3])), layout="NCHW", grayscale=shape[1] == 1)
            if shape[3] in (1, 3) and all(isinstance(d, int) for d in shape[1:3]):
                return ImageOptions(size=(int(shape[1]), int(shape[2])), layout="NHWC", grayscale=shape[3] == 1)
        return None

    def image_defaults(self) -> ImageOptions:
        """:meth:`image_input`, or ImageNet's 224 x 224 NCHW when the input shape says nothing."""
        return self.image_input() or ImageOptions()

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
        """The zoo for a zoo model, texts for a text model, images for one image input, else arrays."""
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

    def single_input(self, what: str) -> str:
        """The name of the model's only input, or an error saying that ``what`` cannot feed several."""
        if len(self.specs) != 1:
            raise CalibrationDataError(
                f"{what} feeds one input, but the model has {len(self.specs)}: "
                + "; ".join(s.describe() for s in self.specs)
                + ". Give feed dicts {input name: array} with the source 'variable' (a notebook array or list), "
                "or .npz files."
            )
        return self.specs[0].name


# ------------------------------------------------------------------------------------------------
# checks: the quantizer's own messages, before anything runs
# ------------------------------------------------------------------------------------------------


def dims(shape: Sequence[Any]) -> str:
    """A shape as the messages write it: ``[1, 3, ?, ?]`` (None for an unknown dimension)."""
    return "[" + ", ".join(str(d) if d is not None else "?" for d in shape) + "]"


def _check_message(feed: Mapping[str, np.ndarray], specs: Sequence[InputSpec], index: int = 0) -> str:
    try:
        check_feed(feed, specs, index)
    except CalibrationDataError as exc:
        return str(exc)
    return ""


def check_samples(feeds: Sequence[Feed], specs: Sequence[InputSpec], what: str = "Calibration") -> list[str]:
    """:func:`~ryzen_nb.calibration.validation.check_feed`'s message for the first failing samples
    (names, dtypes, shapes, NaN/Inf).

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


def mapping_rows(specs: Sequence[InputSpec], feed: Mapping[str, np.ndarray]) -> list[MappingRow]:
    """The model's inputs next to what one prepared sample gives, each with check_feed's verdict.

    Example: a sample laid out NHWC for an NCHW model gives a row whose ``problem`` reads
    "... shape [1, 16, 16, 3], but the model expects [1, 3, 16, 16] ... transpose NHWC <-> NCHW."
    """
    # a name mismatch is one message about the whole feed (with check_feed's rename hint)
    names_problem = _check_message(feed, specs)
    rows = []
    for spec in specs:
        expected = f"{spec.dtype} {dims(spec.shape)}"
        if spec.name in feed:
            value = np.asarray(feed[spec.name])
            given = f"{value.dtype} {dims(value.shape)}"
            rows.append(MappingRow(spec.name, expected, spec.name, given,
                                   _check_message({spec.name: feed[spec.name]}, [spec])))
        else:
            rows.append(MappingRow(spec.name, expected, "", "missing", names_problem))
    for name, value in feed.items():
        if name not in {s.name for s in specs}:
            array = np.asarray(value)
            rows.append(MappingRow("", "not an input", name, f"{array.dtype} {dims(array.shape)}", names_problem))
    return rows
