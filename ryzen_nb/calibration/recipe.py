"""Calibration data recipes: source -> preprocessing -> reader, with a held-out evaluation split.

A :class:`Recipe` says where the samples come from and how they become the model's feeds;
:meth:`Recipe.build` prepares them for one model, checks every sample against the model's inputs
(names, dtypes, shapes, NaN/Inf, with the quantizer's own messages and their fix) and splits them
into calibration and evaluation samples that never overlap. :meth:`Recipe.to_python` writes the
same steps as plain code. The calibration wizard (:class:`ryzen_nb.ui.wizard.CalibrationWizard`)
is a widget editing a Recipe; scripts use the Recipe directly::

    from ryzen_nb.calibration import ImageOptions, Recipe, TextOptions

    recipe = Recipe(source="zoo", dataset="imagenet_samples", calibration_size=10, evaluation_size=10)
    data = recipe.build("model.onnx")          # raises CalibrationDataError naming the sample and the fix
    reader = data.reader()                     # for ryzen_nb.quantize(model, out, "XINT8", reader)
    feeds, labels = data.evaluation()          # held out: never the calibration samples
    print(recipe.to_python("model.onnx"))      # the same data, as code without ryzen_nb.calibration.recipe

    Recipe(source="images", folder="calib/", image=ImageOptions(size=224, normalize="imagenet"))
    Recipe.for_model("model.onnx", source="images", folder="calib/")   # crop size and layout from the model
    Recipe(source="npy", folder="calib_npy/")                          # .npy / .npz files
    Recipe(source="variable", variable="x", labels_variable="y").build(model, variables={"x": x, "y": y})
    Recipe(source="texts", text_file="texts.txt", text=TextOptions(tokenizer="tokenizer.json"))

Sources (:data:`SOURCES`): ``"images"`` (a folder of images: resized, centre-cropped, normalised),
``"npy"`` (.npy / .npz files), ``"variable"`` (an array, a list of arrays or of feed dicts, named
by the variable holding it), ``"zoo"`` (a :mod:`ryzen_nb.zoo` data set, with its own disjoint
splits) and ``"texts"`` (a .txt file or a list of str, tokenized by a zoo model or a tokenizer.json).

The parts live in two modules below this one: :mod:`~ryzen_nb.calibration.recipe_target` (the
model's inputs and the checks) and :mod:`~ryzen_nb.calibration.recipe_sources` (the sources and
the split).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ryzen_nb.calibration.readers import ArrayReader, CalibrationReader
from ryzen_nb.calibration.recipe_sources import (
    SOURCES,
    SamplePool,
    image_folder_pool,
    is_pair_dataset,
    labels_of,
    npy_folder_pool,
    preprocessing_kind,
    read_texts,
    sample_preparer,
    split_indices,
    texts_pool,
    variable_pool,
    zoo_pools,
)
from ryzen_nb.calibration.recipe_target import (
    DATASET_FOR_MODEL,
    ImageOptions,
    MappingRow,
    ModelTarget,
    TextOptions,
    check_samples,
    mapping_rows,
)
from ryzen_nb.errors import CalibrationDataError, UnknownNameError

__all__ = [
    "SOURCES",
    "ImageOptions",
    "MappingRow",
    "ModelTarget",
    "PreparedData",
    "Recipe",
    "TextOptions",
    "check_samples",
    "mapping_rows",
    "split_indices",
]

Feed = dict[str, np.ndarray]

#: raw samples kept for a preview (thumbnails, texts): the first calibration ones
PREVIEW_SAMPLES = 8
#: fewer calibration samples than this get a note: 100 to 1000 is what calibration usually takes
TYPICAL_CALIBRATION = 100


@dataclass(frozen=True)
class Recipe:
    """Where calibration samples come from and how they become feeds; see the module's examples.

    Sizes count samples: one sample is one model run (one image, one text); for the sentence-pair
    data set ``sentences`` they count pairs, each two model runs.
    """

    #: one of :data:`SOURCES`: "images", "npy", "variable", "zoo" or "texts"
    source: str = "images"
    #: the folder of images or of .npy/.npz files
    folder: str = ""
    #: the name of the variable holding the data (an array, a list of arrays or feed dicts, a list of texts)
    variable: str = ""
    #: the name of an optional variable holding one label per sample (variable and texts sources)
    labels_variable: str = ""
    #: a zoo data set name (see ``ryzen_nb.zoo.list_datasets()``)
    dataset: str = ""
    #: a .txt file of texts, one per line (texts source; used instead of ``variable`` when given)
    text_file: str = ""
    image: ImageOptions = field(default_factory=ImageOptions)
    text: TextOptions = field(default_factory=TextOptions)
    calibration_size: int = 100
    evaluation_size: int = 100
    #: seed of the calibration / evaluation shuffle (sources other than the zoo, whose splits are fixed)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise UnknownNameError("calibration data source", self.source, SOURCES)
        for name in ("folder", "text_file"):  # a pathlib.Path is welcome; the code writes it as a str
            value = getattr(self, name)
            object.__setattr__(self, name, os.fspath(value) if isinstance(value, os.PathLike) else value)
        for name in ("calibration_size", "evaluation_size", "seed"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise CalibrationDataError(f"Recipe({name}={value!r}): give a whole number >= 0.")

    @classmethod
    def for_model(cls, model: Any, **choices: Any) -> Recipe:
        """A recipe with the defaults ``model`` implies, then ``choices``: the source and zoo data set
        it suits, the crop size, layout and channels of its image input, the sequence length of its
        ``input_ids`` and a ``tokenizer.json`` beside it. Example::

            Recipe.for_model("cnn.onnx", source="images", folder="calib/")   # size and layout from the model
        """
        target = ModelTarget.resolve(model)
        defaults = {"source": target.default_source(), "dataset": target.default_dataset(),
                    "image": target.image_defaults(), "text": target.text_defaults()}
        return cls(**{**defaults, **choices})

    def missing(self) -> str:
        """What still has to be chosen before there is any data ("" once the source is complete)."""
        if self.source in ("images", "npy") and not self.folder:
            what = "calibration images" if self.source == "images" else ".npy / .npz files"
            return f"No folder yet: give the folder of {what} (Recipe(folder=...); in the wizard: step 1, Source)."
        if self.source == "variable" and not self.variable:
            return ("No variable yet: give the name of the variable holding the data (Recipe(variable='x_calib'); "
                    "in the wizard: step 1, Source, or wizard.set_data(array)).")
        if self.source == "zoo" and not self.dataset:
            return "No zoo data set chosen yet: Recipe(dataset='digits') for instance (in the wizard: step 1, Source)."
        if self.source == "texts" and not (self.text_file or self.variable):
            return ("No texts yet: give a .txt file (one text per line) or the name of a variable holding a list of "
                    "texts (Recipe(text_file=...) or Recipe(variable=...); in the wizard: step 1, Source, or "
                    "wizard.set_data(list_of_texts)).")
        return ""

    def preprocessing(self, model: Any) -> str:
        """How this recipe's samples become ``model``'s feeds: "images", "zoo-model", "tokenizer" or
        "as-is" (see :func:`~ryzen_nb.calibration.recipe_sources.preprocessing_kind`)."""
        return preprocessing_kind(self.source, self.dataset, ModelTarget.resolve(model))

    def build(self, model: Any, variables: Mapping[str, Any] | None = None, *, check: bool = True) -> PreparedData:
        """Prepare the calibration and evaluation feeds for ``model`` and check them against its inputs.

        ``model`` is a path, an ``onnx.ModelProto``, a zoo model name, a ``ZooModel`` or a
        :class:`ModelTarget`; ``variables`` holds the variables the recipe names (``globals()`` in a
        notebook). A source that cannot be read (a missing folder, an unknown variable) raises
        :class:`~ryzen_nb.errors.CalibrationDataError`; so do samples that do not fit the model,
        unless ``check=False``, which lists them in ``problems`` instead (the wizard shows them
        next to the model's inputs). Example::

            data = Recipe(source="zoo", dataset="digits", calibration_size=10).build("resnet_digits")
            len(data.calibration_feeds), data.problems          # 10, []
        """
        missing = self.missing()
        if missing:
            raise CalibrationDataError(missing)
        target = ModelTarget.resolve(model)
        variables = variables if variables is not None else {}
        if self.source == "zoo":
            calibration_pool, evaluation_pool = zoo_pools(self.dataset, self._preparer(target))
            calibration_index = np.arange(min(self.calibration_size, len(calibration_pool.samples)))
            evaluation_index = np.arange(min(self.evaluation_size, len(evaluation_pool.samples)))
            available, notes = self._zoo_sizes(calibration_pool, evaluation_pool)
        else:
            pool = self._pool(target, variables)
            calibration_pool = evaluation_pool = pool
            count = len(pool.samples)
            calibration_index, evaluation_index = split_indices(count, self.calibration_size, self.evaluation_size,
                                                                self.seed)
            available, notes = f"the source holds {count} samples", []
            if self.calibration_size + self.evaluation_size > count:
                notes.append(
                    f"Asked for {self.calibration_size} calibration + {self.evaluation_size} evaluation samples; the "
                    f"source holds {count}: calibration gets {len(calibration_index)}, evaluation the "
                    f"{len(evaluation_index)} left."
                )
        calibration = [feed for i in calibration_index for feed in calibration_pool.prepare(calibration_pool.samples[i])]
        evaluation = [feed for i in evaluation_index for feed in evaluation_pool.prepare(evaluation_pool.samples[i])]
        labels = None if evaluation_pool.labels is None else evaluation_pool.labels[evaluation_index]
        if 0 < len(calibration) < TYPICAL_CALIBRATION:
            notes.append(f"{len(calibration)} calibration samples: {TYPICAL_CALIBRATION} to 1000 is typical; fewer "
                         "give noisier ranges.")
        problems = check_samples(calibration, target.specs, "Calibration")
        problems += check_samples(evaluation, target.specs, "Evaluation")
        if not calibration:
            problems.insert(0, "No calibration samples: the source is empty or the calibration size is 0.")
        elif problems:
            problems += self._hints(target)
        preview = [calibration_pool.samples[i] for i in calibration_index[:PREVIEW_SAMPLES]]
        data = PreparedData(target, calibration, evaluation, labels, preview, calibration_pool.kind, available,
                            notes, problems)
        if check:
            data.raise_problems()
        return data

    def to_python(self, model: Any) -> str:
        """Python code building the same ``reader``, ``evaluation_feeds`` and ``evaluation_labels``
        as :meth:`build`, with ryzen_nb's readers and zoo only; variables are referred to by name.

        Example::

            namespace = {}
            exec(Recipe(source="zoo", dataset="digits").to_python("resnet_digits"), namespace)
            namespace["reader"], namespace["evaluation_feeds"], namespace["evaluation_labels"]
        """
        return _code(self, ModelTarget.resolve(model))

    # -- the parts of build ------------------------------------------------------------------------
    def _preparer(self, target: ModelTarget) -> Callable[[Any], Feed]:
        return sample_preparer(preprocessing_kind(self.source, self.dataset, target), self.text, target)

    def _pool(self, target: ModelTarget, variables: Mapping[str, Any]) -> SamplePool:
        if self.source == "images":
            return image_folder_pool(self.folder, self.image, target)
        if self.source == "npy":
            return npy_folder_pool(self.folder, target)
        if self.source == "variable":
            return variable_pool(self.variable, self.labels_variable, target, variables)
        texts = read_texts(self.text_file, self.variable, variables)
        return texts_pool(texts, self._preparer(target), labels_of(self.labels_variable, variables, len(texts)))

    def _zoo_sizes(self, calibration: SamplePool, evaluation: SamplePool) -> tuple[str, list[str]]:
        """What the zoo's splits hold, and notes when the sizes asked for are capped to them."""
        n_calibration, n_evaluation = len(calibration.samples), len(evaluation.samples)
        unit = "sentence pairs" if calibration.kind == "pair" else "samples"
        available = (f"{self.dataset}: {n_calibration} {unit} in its calibration split, {n_evaluation} in its "
                     "evaluation split (the zoo's splits never overlap)")
        notes = []
        if self.calibration_size > n_calibration:
            notes.append(f"Asked for {self.calibration_size} calibration {unit}; the calibration split of "
                         f"{self.dataset} holds {n_calibration}: using {n_calibration}.")
        if self.evaluation_size > n_evaluation:
            notes.append(f"Asked for {self.evaluation_size} evaluation {unit}; the evaluation split of "
                         f"{self.dataset} holds {n_evaluation}: using {n_evaluation}.")
        if calibration.kind == "pair":
            notes.append("Each sentence pair is two model runs: feeds 2i and 2i+1 belong to label i.")
        return available, notes

    def _hints(self, target: ModelTarget) -> list[str]:
        """When the samples do not fit, what in the recipe may be the cause (beyond each sample's own message)."""
        if self.source == "zoo" and preprocessing_kind(self.source, self.dataset, target) == "as-is":
            models = [m for m, d in DATASET_FOR_MODEL.items() if d == self.dataset]
            return [f"The zoo's {self.dataset} samples go into a model that is not a zoo model as they are, without "
                    "preprocessing. Preprocess them yourself and use the source 'variable'"
                    + (f", or build for the zoo model {models[0]!r} (zoo.load_model({models[0]!r}))." if models
                       else ".")]
        if self.source != "images":
            return []
        # the model's input shape may ask for other image options than the recipe's: say which
        wanted, chosen = target.image_input(), self.image
        if wanted is None or (wanted.size, wanted.layout, wanted.grayscale) == (
                chosen.size, chosen.layout, chosen.grayscale):
            return []  # the shape says nothing about images, or the options already follow it
        channels = "1 channel" if wanted.grayscale else "3 channels"
        return [f"The model takes {wanted.size[0]} x {wanted.size[1]} {wanted.layout} images with {channels}: use "
                f"ImageOptions(size={wanted.size!r}, layout={wanted.layout!r}, grayscale={wanted.grayscale!r}) "
                "(the wizard's Preprocessing step; Recipe.for_model(model, ...) reads them from the model)."]


@dataclass(repr=False)
class PreparedData:
    """The prepared calibration and evaluation feeds of a :class:`Recipe` for one model, with what
    was found on the way. :meth:`reader` and :meth:`evaluation` refuse while there are problems."""

    target: ModelTarget
    calibration_feeds: list[Feed]
    #: held out: never a calibration sample
    evaluation_feeds: list[Feed]
    evaluation_labels: np.ndarray | None
    #: the raw samples behind the first calibration feeds (files, arrays, texts), for a preview
    preview: list[Any]
    #: what the ``preview`` items are: "image-file", "image-array", "array", "text" or "pair"
    kind: str
    #: how many samples the source holds, in words
    available: str
    #: remarks that do not stop anything (capped sizes, few samples)
    notes: list[str] = field(default_factory=list)
    #: what would make calibration fail or go wrong, each with the fix
    problems: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        labels = "labelled" if self.evaluation_labels is not None else "no labels"
        return (f"<PreparedData for {self.target.label}: {len(self.calibration_feeds)} calibration, "
                f"{len(self.evaluation_feeds)} evaluation samples ({labels}), {len(self.problems)} problem(s)>")

    @property
    def calibration_megabytes(self) -> float:
        """Memory of the prepared calibration tensors, in MB (10^6 bytes)."""
        return sum(a.nbytes for feed in self.calibration_feeds for a in feed.values()) / 1e6

    def token_counts(self) -> list[int] | None:
        """Non-padding tokens of each calibration text (from its attention mask), or None for non-text data."""
        if self.kind not in ("text", "pair"):
            return None
        counts = []
        for feed in self.calibration_feeds:
            if "attention_mask" in feed:
                counts.append(int(np.count_nonzero(feed["attention_mask"])))
            elif "input_ids" in feed:  # no mask: padding is token id 0 in BERT vocabularies
                counts.append(int(np.count_nonzero(feed["input_ids"])))
        return counts

    def raise_problems(self) -> None:
        """Raise :class:`~ryzen_nb.errors.CalibrationDataError` listing the problems, if there are any."""
        if self.problems:
            raise CalibrationDataError("The calibration data is not ready:\n- " + "\n- ".join(self.problems))

    def reader(self) -> CalibrationReader:
        """A reader over the calibration samples (onnxruntime's CalibrationDataReader protocol), for
        ``ryzen_nb.quantize(model, out, "XINT8", reader)``."""
        self.raise_problems()
        return ArrayReader(list(self.calibration_feeds)).bind(self.target.names)

    def evaluation(self) -> tuple[list[Feed], np.ndarray | None]:
        """The held-out feeds (never used for calibration) and their labels (None when the source has none)."""
        self.raise_problems()
        labels = None if self.evaluation_labels is None else self.evaluation_labels.copy()
        return list(self.evaluation_feeds), labels


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
    kind = preprocessing_kind(recipe.source, recipe.dataset, target)
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


def _samples_code(recipe: Recipe, target: ModelTarget, code: _Code) -> None:
    """The lines reading the source into ``samples`` (and ``labels``), for the sources split here."""
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
    elif recipe.text_file:
        code.need("pathlib", "Path")
        code.add(f"samples = [line for line in Path({recipe.text_file!r}).read_text(encoding='utf-8').splitlines() "
                 "if line.strip()]")
    else:
        code.add(f"samples = list({recipe.variable})  # the texts")
    if recipe.source in ("variable", "texts") and recipe.labels_variable:
        code.add(f"labels = np.asarray({recipe.labels_variable})  # one per sample")
    code.add("")


def _code(recipe: Recipe, target: ModelTarget) -> str:
    """The body of :meth:`Recipe.to_python`."""
    code = _Code()
    code.need("ryzen_nb.calibration.readers", "ArrayReader")
    missing = recipe.missing()
    header = [f"# Calibration and evaluation data for {target.label}, as the calibration recipe builds them."]
    if missing:
        header.append(f"# Not ready yet: {missing}")
    if recipe.source != "zoo":
        _samples_code(recipe, target, code)
    feed = _feed_code(recipe, target, code)
    c, e = recipe.calibration_size, recipe.evaluation_size
    if recipe.source == "zoo":
        code.need("ryzen_nb", "zoo")
        code.add(f"calibration = zoo.load_dataset({recipe.dataset!r}, split='calibration')",
                 f"evaluation = zoo.load_dataset({recipe.dataset!r}, split='evaluation')  # never overlaps calibration")
        if is_pair_dataset(recipe.dataset):
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
