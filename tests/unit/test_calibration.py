"""Calibration readers, feed validation, streaming statistics and methods."""

from __future__ import annotations

import numpy as np
import pytest

from ryzen_nb.calibration import (
    ArrayReader,
    ImageFolderReader,
    IterableReader,
    NpyFolderReader,
    TensorStats,
    check_feed,
    get_method,
    make_reader,
    pow2_scale_for_values,
)
from ryzen_nb.errors import CalibrationDataError, ConfigError, UnknownNameError
from ryzen_nb.formats import get
from ryzen_nb.graph.prepare import InputSpec

SPEC = [InputSpec("input", (1, 3, 8, 8), np.dtype(np.float32))]


def test_array_reader_splits_samples_and_is_an_onnxruntime_reader() -> None:
    data = np.random.default_rng(0).standard_normal((5, 3, 8, 8))  # float64 on purpose
    reader = make_reader(data, input_names=["input"], input_shapes={"input": (1, 3, 8, 8)}, limit=3)
    assert len(reader) == 3
    feeds = []
    while (f := reader.get_next()) is not None:
        feeds.append(f)
    assert len(feeds) == 3 and feeds[0]["input"].shape == (1, 3, 8, 8) and feeds[0]["input"].dtype == np.float32
    reader.rewind()
    assert reader.get_next() is not None
    for f in feeds:
        check_feed(f, SPEC)


def test_other_sources(tmp_path) -> None:
    sample = np.zeros((1, 3, 8, 8), np.float32)
    assert len(list(make_reader([{"input": sample}] * 2))) == 2
    assert len(list(make_reader([sample] * 4, input_names=["input"]))) == 4
    gen = (sample for _ in range(3))
    reader = make_reader(gen, input_names=["input"])
    assert isinstance(reader, IterableReader) and len(list(reader)) == 3 and len(list(reader)) == 3  # cached
    factory = make_reader(lambda: iter([sample, sample]), input_names=["input"])
    assert len(list(factory)) == 2
    for i in range(3):
        np.save(tmp_path / f"{i}.npy", sample)
    np.savez(tmp_path / "3.npz", input=sample)
    folder = make_reader(tmp_path, input_names=["input"])
    assert isinstance(folder, NpyFolderReader) and len(list(folder)) == 4

    class OrtStyle:
        def __init__(self):
            self.i = 0

        def get_next(self):
            self.i += 1
            return {"input": sample} if self.i <= 2 else None

        def rewind(self):
            self.i = 0

    assert len(list(make_reader(OrtStyle(), limit=5))) == 2


def test_image_folder_reader(tmp_path) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(3):
        Image.fromarray(rng.integers(0, 255, (20, 30, 3), dtype=np.uint8)).save(tmp_path / f"img{i}.png")
    (tmp_path / "notes.txt").write_text("not an image")
    reader = make_reader(tmp_path, input_names=["input"], input_shapes={"input": (1, 3, 16, 16)})
    assert isinstance(reader, ImageFolderReader)
    feeds = list(reader)
    assert len(feeds) == 3 and feeds[0]["input"].shape == (1, 3, 16, 16)
    nhwc = ImageFolderReader(tmp_path, 16, layout="NHWC", normalize="minus127_div128", input_name="x", limit=2)
    x = next(iter(nhwc))["x"]
    assert x.shape == (1, 16, 16, 3) and -1.0 <= x.min() and x.max() <= 1.0
    with pytest.raises(UnknownNameError, match="imagenet"):
        ImageFolderReader(tmp_path, 16, normalize="imagenett")


@pytest.mark.parametrize(
    "feed,message",
    [
        ({}, "is missing input\\(s\\) \\['input'\\]"),
        ({"image": np.zeros((1, 3, 8, 8), np.float32)}, "Rename 'image' to 'input'"),
        ({"input": np.zeros((1, 3, 8, 8), np.float64)}, "dtype float64.*astype\\(np.float32\\)"),
        ({"input": np.zeros((3, 8, 8), np.float32)}, "rank 3.*Add the batch dimension"),
        ({"input": np.zeros((1, 8, 8, 3), np.float32)}, "layout looks swapped"),
        ({"input": np.full((1, 3, 8, 8), np.nan, np.float32)}, "NaN"),
        ({"input": np.full((1, 3, 8, 8), np.inf, np.float32)}, "Inf"),
        ({"input": [1, 2]}, "expected a numpy array"),
    ],
)
def test_feed_errors_name_the_problem(feed, message) -> None:
    with pytest.raises(CalibrationDataError, match=message):
        check_feed(feed, SPEC, index=7)


def test_reader_errors(tmp_path) -> None:
    with pytest.raises(CalibrationDataError, match="does not exist"):
        make_reader(tmp_path / "nope")
    with pytest.raises(CalibrationDataError, match="No .npy or .npz"):
        make_reader(tmp_path)
    with pytest.raises(CalibrationDataError, match="No calibration data"):
        make_reader(None)
    with pytest.raises(CalibrationDataError, match="positive integer"):
        ArrayReader(np.zeros((2, 2)), limit=0)
    with pytest.raises(CalibrationDataError, match="give each sample as a dict"):
        list(make_reader(np.zeros((2, 3)), input_names=["a", "b"]))


def test_histogram_memory_is_bounded_and_counts_everything() -> None:
    stats = TensorStats(num_bins=64)
    rng = np.random.default_rng(0)
    total = 0
    for scale in (0.01, 1.0, 100.0, 1e4):
        x = rng.standard_normal(1000).astype(np.float32) * scale
        stats.update(x)
        total += x.size
        assert stats.hist.size == 64  # never grows
        assert stats.threshold >= np.abs(x).max()
    assert stats.hist.sum() == total and stats.count == 4


def test_methods() -> None:
    rng = np.random.default_rng(0)
    stats = TensorStats()
    for _ in range(10):
        stats.update(rng.standard_normal(5000).astype(np.float32))
    int8, uint8 = get("int8"), get("uint8")
    mm = get_method("MinMax").params(stats, int8, True)
    assert np.isclose(mm.scale, max(abs(stats.min), stats.max) / 127, rtol=1e-6)
    pct = get_method("Percentile").params(stats, int8, True, percentile=99.0)
    assert pct.scale < mm.scale  # tails cut
    ent = get_method("Entropy").params(stats, int8, True)
    assert 0 < ent.scale <= mm.scale
    mse = get_method("MinMSE").params(stats, uint8, True)
    assert int(mse.zero_point) == 128 and np.log2(mse.scale) == np.round(np.log2(mse.scale))
    nov = get_method("NonOverflow").params(stats, uint8, True)
    assert np.log2(nov.scale) == np.round(np.log2(nov.scale))
    # MinMSE never does worse than NonOverflow on the data it saw
    assert get_method("PowerOfTwoMethod.MinMSE") is get_method("MinMSE")
    with pytest.raises(UnknownNameError, match="MinMSE"):
        get_method("MinMSR")
    with pytest.raises(ConfigError, match="float8"):
        get_method("Distribution").params(stats, int8, True)


def test_weight_pow2_minmse_minimises_error() -> None:
    w = np.random.default_rng(3).standard_normal(1000) * 0.1
    fmt = get("int8")
    scale, zp = pow2_scale_for_values(w, fmt, "MinMSE")
    err = lambda s: np.sum((np.clip(np.rint(w / s), -128, 127) * s - w) ** 2)  # noqa: E731
    assert err(scale) <= min(err(scale * 2), err(scale / 2))


def test_calibration_memory_does_not_grow_with_samples() -> None:
    """Peak memory of collecting statistics is the same for 10 and 200 samples (streamed)."""
    import tracemalloc

    from ryzen_nb.calibration import collect_statistics
    from ryzen_nb.graph import prepare
    from ryzen_nb.testing import resnet_cnn

    prepared = prepare(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16))
    tensors = {n.output[0]: True for n in prepared.model.graph.node}

    def peak(samples: int) -> int:
        rng = np.random.default_rng(0)
        reader = make_reader(lambda: (rng.standard_normal((1, 3, 16, 16)).astype(np.float32) for _ in range(samples)),
                             input_names=["input"])
        tracemalloc.start()
        result = collect_statistics(prepared, reader, tensors, progress=False)
        _, top = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert result.samples == samples
        return top

    small, large = peak(10), peak(200)
    assert large < small * 1.2 + 256 * 1024, (small, large)


def test_a_reader_written_as_in_the_ryzen_ai_docs() -> None:
    """A subclass of onnxruntime's CalibrationDataReader without __len__ (its __len__ raises
    NotImplementedError): the way Ryzen AI's examples write readers."""
    from onnxruntime.quantization import CalibrationDataReader

    import ryzen_nb
    from ryzen_nb.testing import random_images, resnet_cnn

    class Reader(CalibrationDataReader):
        def __init__(self, images):
            self.feeds = iter([{"input": x[None]} for x in images])

        def get_next(self):
            return next(self.feeds, None)

    summary = ryzen_nb.quantize(resnet_cnn(0, blocks=(1,), width=8, image_size=16), None, "XINT8",
                                Reader(random_images(5, size=16)), progress=False)
    assert summary.calibration_samples == 5
