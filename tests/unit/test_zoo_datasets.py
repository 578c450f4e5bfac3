"""The zoo's data sets: contents, labels, and splits that never overlap (and never move)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ryzen_nb.zoo import load_dataset
from ryzen_nb.zoo.datasets import DATASETS, rotten_tomatoes_table, split_indices


@pytest.fixture(scope="module", autouse=True)
def zoo_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The same fresh cache as test_zoo_models uses, filled through the real code path."""
    path = tmp_path_factory.getbasetemp() / "zoo-cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RYZEN_NB_CACHE", str(path))
        yield path


@pytest.mark.parametrize("name", list(DATASETS))
def test_splits_are_disjoint_fixed_and_cover_their_samples(name: str) -> None:
    splits = split_indices(name)
    assert set(splits) >= {"calibration", "evaluation"}
    everything = load_dataset(name, split="all")
    for a in splits:
        assert len(splits[a]) > 0 and len(np.unique(splits[a])) == len(splits[a])
        assert splits[a].min() >= 0 and splits[a].max() < len(everything)
        for b in splits:
            if a < b:
                assert not set(splits[a].tolist()) & set(splits[b].tolist()), f"{name}: {a} and {b} overlap"
    if "train" in splits:  # then the three splits are the whole data set
        assert sum(len(v) for v in splits.values()) == len(everything)
    again = split_indices(name)
    assert all(np.array_equal(splits[k], again[k]) for k in splits), "splits must not change between calls"
    for split, index in splits.items():
        part = load_dataset(name, split=split)
        assert len(part) == len(index) and part.split == split and part.name == name
        np.testing.assert_array_equal(part.labels, everything.labels[index])
        sample, label = part[0]
        assert label == part.labels[0]


def test_imagenet_samples() -> None:
    data = load_dataset("imagenet_samples")
    assert len(data) == 20 and len(data.label_names) == 1000
    assert data.labels[0] == 243 and data.label_names[243] == "bull mastiff"  # foolbox/data/imagenet_00_243.jpg
    for image in data.samples:
        assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3 and min(image.shape[:2]) >= 224
    assert [len(load_dataset("imagenet_samples", split=s)) for s in ("calibration", "evaluation")] == [10, 10]


def test_cifar10_samples() -> None:
    data = load_dataset("cifar10_samples", split="evaluation")
    assert (
        isinstance(data.samples, np.ndarray)
        and data.samples.shape == (10, 32, 32, 3)
        and data.samples.dtype == np.uint8
    )
    assert set(data.labels.tolist()) <= set(range(10)) and data.label_names[3] == "cat"


def test_digits() -> None:
    sizes = {s: len(load_dataset("digits", split=s)) for s in ("train", "calibration", "evaluation", "all")}
    assert sizes == {"train": 1259, "calibration": 179, "evaluation": 359, "all": 1797}
    data = load_dataset("digits")
    assert data.samples.shape == (1797, 8, 8) and data.samples.dtype == np.uint8 and data.samples.max() == 16
    # stratified: every digit in every split, in about the same share
    for split in ("calibration", "evaluation"):
        counts = np.bincount(load_dataset("digits", split=split).labels, minlength=10)
        assert counts.min() >= 0.8 * counts.mean()


def test_rotten_tomatoes_is_deduplicated_and_split_by_movie() -> None:
    table = rotten_tomatoes_table()
    keys = table["text"].str.casefold().str.split().str.join(" ")
    assert keys.is_unique, "duplicates (ignoring case and spacing) were removed"
    assert len(table) > 12_000 and set(table["label"]) == {0, 1}
    splits = split_indices("rotten_tomatoes")
    movies = {name: set(table["movie"].iloc[index]) for name, index in splits.items()}
    assert not movies["train"] & movies["evaluation"] and not movies["train"] & movies["calibration"]
    assert not movies["calibration"] & movies["evaluation"], "no movie spans two splits"
    assert 2000 <= len(splits["evaluation"]) < 2100 and 500 <= len(splits["calibration"]) < 600
    data = load_dataset("rotten_tomatoes", split="calibration")
    assert all(isinstance(t, str) and t for t in data.samples) and data.label_names == ["rotten", "fresh"]


def test_sentences() -> None:
    data = load_dataset("sentences")
    assert len(data) == 40 and data.label_names is None
    assert all(isinstance(a, str) and isinstance(b, str) and a != b for a, b in data.samples)
    assert data.labels.dtype == np.float32 and data.labels.min() == 0.0 and data.labels.max() == 5.0
    assert len(set(data.samples)) == 40
