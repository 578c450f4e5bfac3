"""Calibration data readers, compatible with ``onnxruntime.quantization.CalibrationDataReader``.

A reader yields *samples*: one feed dict ``{input name: array}`` per model run (for a model with a
batch dimension of 1, one sample is one image, one sentence...). ``limit`` always counts samples.

Build one from whatever you have with :func:`make_reader`::

    make_reader(np_array)                      # split along axis 0 into samples
    make_reader([{"input": a}, {"input": b}])  # feed dicts
    make_reader("calib_images/", size=224)     # a folder of images (Pillow)
    make_reader("calib_npy/")                  # a folder of .npy / .npz files
    make_reader(my_generator_function)         # anything iterable, or a function returning one
    make_reader(my_onnxruntime_reader)         # already a reader: used as is
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb.calibration.files import read_archive, read_array, read_image
from ryzen_nb.errors import CalibrationDataError, UnknownNameError

__all__ = [
    "CalibrationReader",
    "ArrayReader",
    "ImageFolderReader",
    "NpyFolderReader",
    "IterableReader",
    "RandomReader",
    "ReaderAdapter",
    "CastingReader",
    "make_reader",
    "IMAGE_SUFFIXES",
]

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".tif", ".tiff", ".webp")
Feed = dict[str, np.ndarray]


class CalibrationReader:
    """Base reader: subclasses implement :meth:`_samples`; this gives ``get_next``/``rewind``
    (the onnxruntime protocol), iteration, ``limit`` and binding to the model's input names."""

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and (not isinstance(limit, (int, np.integer)) or limit < 1):
            raise CalibrationDataError(f"limit counts samples and must be a positive integer; got {limit!r}.")
        self.limit = None if limit is None else int(limit)
        self.input_names: list[str] | None = None
        self._iterator: Iterator[Feed] | None = None

    # -- to override --------------------------------------------------------------------------------
    def _samples(self) -> Iterator[Feed]:
        raise NotImplementedError

    def _count(self) -> int | None:
        """Number of samples before ``limit``, if known without reading them."""
        return None

    # -- binding to a model ---------------------------------------------------------------------------
    def bind(self, input_names: Sequence[str]) -> CalibrationReader:
        """Learn the model's input names (single-input data can then omit the name)."""
        self.input_names = list(input_names)
        return self

    def _single_name(self) -> str:
        if not self.input_names:
            raise CalibrationDataError(
                "This data has no input names and the reader is not bound to a model; pass input_name=..."
            )
        if len(self.input_names) != 1:
            raise CalibrationDataError(
                f"The model has {len(self.input_names)} inputs {self.input_names}; give each sample as a dict "
                "{input name: array} instead of a bare array."
            )
        return self.input_names[0]

    def _feed(self, value: Any, input_name: str | None = None) -> Feed:
        """A feed dict from a dict (names given) or a bare array (the model's single input)."""
        if isinstance(value, Mapping):
            return {str(k): _as_array(v, str(k)) for k, v in value.items()}
        name = input_name or self._single_name()
        return {name: _as_array(value, name)}

    # -- onnxruntime protocol ----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Feed]:
        samples = self._samples()
        return itertools.islice(samples, self.limit) if self.limit is not None else samples

    def get_next(self) -> Feed | None:
        if self._iterator is None:
            self._iterator = iter(self)
        return next(self._iterator, None)

    def rewind(self) -> None:
        self._iterator = None

    def __len__(self) -> int:
        n = self._count()
        if n is None:
            raise TypeError(f"{type(self).__name__} does not know its length before reading")
        return n if self.limit is None else min(n, self.limit)

    def __repr__(self) -> str:
        try:
            n = f"{len(self)} samples"
        except TypeError:
            n = "unknown length"
        return f"<{type(self).__name__}: {n}>"


def _batch_of(shape: Sequence[Any] | None) -> int | None:
    if shape and isinstance(shape[0], (int, np.integer)) and shape[0] > 0:
        return int(shape[0])
    return None


class ArrayReader(CalibrationReader):
    """Samples from numpy arrays.

    ``data`` is one array (a single-input model), a dict ``{input name: array}`` whose arrays are
    split along axis 0 together, or a list of feed dicts / arrays, each one sample. An array with
    one more dimension than the model input is split along axis 0 into samples of the model's
    batch size (1 by default). float64 arrays are converted to float32.
    """

    def __init__(
        self,
        data: np.ndarray | Mapping[str, np.ndarray] | Sequence[Any],
        input_name: str | None = None,
        batch_size: int = 1,
        limit: int | None = None,
    ) -> None:
        super().__init__(limit)
        self.data = data
        self.input_name = input_name
        self.batch_size = int(batch_size)
        if isinstance(data, np.ndarray) and data.ndim == 0:
            raise CalibrationDataError("Calibration data is a scalar; give an array with a sample axis first.")

    def _count(self) -> int | None:
        if isinstance(self.data, np.ndarray):
            return int(np.ceil(self.data.shape[0] / self.batch_size))
        if isinstance(self.data, Mapping):
            first = next(iter(self.data.values()))
            return int(np.ceil(np.shape(first)[0] / self.batch_size))
        return len(self.data)

    def _samples(self) -> Iterator[Feed]:
        b = self.batch_size
        if isinstance(self.data, np.ndarray):
            for i in range(0, self.data.shape[0], b):
                yield self._feed(self.data[i : i + b], self.input_name)
        elif isinstance(self.data, Mapping):
            lengths = {k: np.shape(v)[0] for k, v in self.data.items()}
            if len(set(lengths.values())) > 1:
                raise CalibrationDataError(
                    f"The arrays of the data dict have different numbers of samples along axis 0: {lengths}."
                )
            n = next(iter(lengths.values()))
            for i in range(0, n, b):
                yield self._feed({k: np.asarray(v)[i : i + b] for k, v in self.data.items()})
        else:
            for item in self.data:
                yield self._feed(item, self.input_name)


def _as_array(value: Any, name: str) -> np.ndarray:
    array = np.asarray(value)
    if array.dtype == np.float64:
        array = array.astype(np.float32)
    if array.dtype == object:
        raise CalibrationDataError(f"Input {name!r}: could not turn the given value into a numeric array.")
    return array


class IterableReader(CalibrationReader):
    """Samples from any iterable of feed dicts or arrays — or a function returning one, which
    lets the reader rewind (a plain generator can only be read once; it is cached as it is read
    so that rewinding works, at the cost of keeping the samples)."""

    def __init__(self, source: Iterable[Any] | Callable[[], Iterable[Any]], input_name: str | None = None,
                 limit: int | None = None) -> None:
        super().__init__(limit)
        self.source = source
        self.input_name = input_name
        self._cache: list[Feed] | None = None
        self._one_shot = isinstance(source, Iterator)

    def _samples(self) -> Iterator[Feed]:
        if callable(self.source) and not isinstance(self.source, Iterable):
            for item in self.source():
                yield self._feed(item, self.input_name)
            return
        if not self._one_shot:
            for item in self.source:  # type: ignore[union-attr]
                yield self._feed(item, self.input_name)
            return
        if self._cache is None:
            self._cache = []
            for item in self.source:  # type: ignore[union-attr]
                feed = self._feed(item, self.input_name)
                self._cache.append(feed)
                yield feed
            return
        yield from self._cache


class NpyFolderReader(CalibrationReader):
    """Samples from a folder of ``.npy`` files (one array each, for a single-input model) and/or
    ``.npz`` files (arrays named after the model inputs), in sorted file-name order — or, as Quark's
    ``calibration_data_path`` expects for multi-input models, one sub-folder of ``.npy`` files per
    input, named after it (the n-th file of each sub-folder forms the n-th sample)."""

    def __init__(self, folder: str | Path, input_name: str | None = None, limit: int | None = None) -> None:
        super().__init__(limit)
        self.folder = _existing_folder(folder)
        self.files = sorted(p for p in self.folder.iterdir() if p.suffix.lower() in (".npy", ".npz"))
        self.per_input = {
            d.name: sorted(d.glob("*.npy")) for d in sorted(self.folder.iterdir()) if d.is_dir() and any(d.glob("*.npy"))
        }
        if not self.files and not self.per_input:
            raise CalibrationDataError(
                f"No .npy or .npz files in {str(self.folder)!r} (nor sub-folders of .npy files named after the inputs)."
            )
        if not self.files:
            counts = {k: len(v) for k, v in self.per_input.items()}
            if len(set(counts.values())) > 1:
                raise CalibrationDataError(f"The per-input sub-folders hold different numbers of .npy files: {counts}.")
        self.input_name = input_name

    def _count(self) -> int:
        return len(self.files) if self.files else len(next(iter(self.per_input.values())))

    def _samples(self) -> Iterator[Feed]:
        if not self.files:
            names = list(self.per_input)
            for paths in zip(*self.per_input.values()):
                yield {n: _with_batch(_as_array(read_array(p), n), self, n) for n, p in zip(names, paths)}
            return
        for path in self.files:
            if path.suffix.lower() == ".npz":
                yield {k: _as_array(v, k) for k, v in read_archive(path).items()}
            else:
                name = self.input_name or self._single_name()
                yield {name: _as_array(read_array(path), name)}


class ImageFolderReader(CalibrationReader):
    """Samples from a folder of images, preprocessed the way classifiers expect.

    Each image is converted to RGB (or L), its shorter side resized to ``resize`` (default: the
    crop size / 0.875, the ImageNet convention), center-cropped to ``size``, scaled and laid out:

    * ``normalize="imagenet"``: (x/255 - mean) / std with ImageNet's mean/std (or your own
      ``mean=``/``std=`` in 0..1 units);
    * ``"minus127_div128"``: (x - 127) / 128 (EfficientNet-Lite, MobileNet TFLite ports);
    * ``"unit"``: x / 255; ``"none"``: raw 0..255.

    ``layout`` is ``"NCHW"`` or ``"NHWC"``; every sample gets a leading batch dimension of 1.
    ``size`` may be left out when the reader is bound to a model with a static input shape.
    """

    IMAGENET_MEAN = (0.485, 0.456, 0.406)
    IMAGENET_STD = (0.229, 0.224, 0.225)

    def __init__(
        self,
        folder: str | Path,
        size: int | tuple[int, int] | None = None,
        *,
        input_name: str | None = None,
        resize: int | None = None,
        normalize: str = "imagenet",
        mean: Sequence[float] | None = None,
        std: Sequence[float] | None = None,
        layout: str = "NCHW",
        dtype: Any = np.float32,
        grayscale: bool = False,
        limit: int | None = None,
        recursive: bool = False,
    ) -> None:
        super().__init__(limit)
        self.folder = _existing_folder(folder)
        pattern = "**/*" if recursive else "*"
        self.files = sorted(p for p in self.folder.glob(pattern) if p.suffix.lower() in IMAGE_SUFFIXES)
        if not self.files:
            raise CalibrationDataError(
                f"No images ({', '.join(IMAGE_SUFFIXES)}) in {str(self.folder)!r}"
                + ("" if recursive else "; pass recursive=True to look into sub-folders") + "."
            )
        valid = ("imagenet", "minus127_div128", "unit", "none")
        if normalize not in valid:
            raise UnknownNameError("normalize mode", normalize, valid)
        if layout.upper() not in ("NCHW", "NHWC"):
            raise CalibrationDataError(f"layout must be 'NCHW' or 'NHWC'; got {layout!r}.")
        self.size = (size, size) if isinstance(size, int) else size
        self.input_name = input_name
        self.resize = resize
        self.normalize = normalize
        self.mean = np.asarray(mean if mean is not None else self.IMAGENET_MEAN, np.float32)
        self.std = np.asarray(std if std is not None else self.IMAGENET_STD, np.float32)
        self.layout = layout.upper()
        self.dtype = np.dtype(dtype)
        self.grayscale = grayscale

    def bind_shape(self, shape: Sequence[Any]) -> None:
        """Take the crop size from a static model input shape (NCHW or NHWC)."""
        if self.size is None and len(shape) == 4:
            h, w = (shape[2], shape[3]) if self.layout == "NCHW" else (shape[1], shape[2])
            if isinstance(h, int) and isinstance(w, int):
                self.size = (h, w)

    def _count(self) -> int:
        return len(self.files)

    def load(self, path: Path) -> np.ndarray:
        """One preprocessed image with a batch dimension of 1."""
        from PIL import Image  # Pillow loads only where images are read

        if self.size is None:
            raise CalibrationDataError(
                "ImageFolderReader needs size=... (or to be bound to a model with a static input shape)."
            )
        h, w = self.size
        with read_image(path) as img:
            img = img.convert("L" if self.grayscale else "RGB")
            short = self.resize or int(round(min(h, w) / 0.875))
            scale = short / min(img.size)
            img = img.resize((max(w, round(img.size[0] * scale)), max(h, round(img.size[1] * scale))), Image.BILINEAR)
            left, top = (img.size[0] - w) // 2, (img.size[1] - h) // 2
            img = img.crop((left, top, left + w, top + h))
            x = np.asarray(img, dtype=np.float32)
        if x.ndim == 2:
            x = x[:, :, None]
        if self.normalize == "imagenet":
            x = (x / 255.0 - self.mean[: x.shape[2]]) / self.std[: x.shape[2]]
        elif self.normalize == "minus127_div128":
            x = (x - 127.0) / 128.0
        elif self.normalize == "unit":
            x = x / 255.0
        if self.layout == "NCHW":
            x = x.transpose(2, 0, 1)
        return x[None].astype(self.dtype)

    def _samples(self) -> Iterator[Feed]:
        for path in self.files:
            name = self.input_name or self._single_name()
            yield {name: self.load(path)}


class ReaderAdapter(CalibrationReader):
    """Wraps a foreign reader (anything with ``get_next``, ideally ``rewind``) to give it ``limit``.

    The quantizer reads its data more than once (the first sample is checked before calibration;
    fine-tuning reads samples again). A reader without ``rewind`` — onnxruntime's
    ``CalibrationDataReader`` base class has none — is read once, and the samples it gave are kept
    in memory for the later passes, so none is lost."""

    def __init__(self, reader: Any, limit: int | None = None) -> None:
        super().__init__(limit)
        self.reader = reader
        self._seen: list[Feed] = []  #: what a reader without rewind() has given so far

    def _samples(self) -> Iterator[Feed]:
        if hasattr(self.reader, "rewind"):
            self.reader.rewind()
            yield from self._read()
            return
        yield from list(self._seen)
        for feed in self._read():
            self._seen.append(feed)
            yield feed

    def _read(self) -> Iterator[Feed]:
        while True:
            feed = self.reader.get_next()
            if feed is None:
                return
            if not isinstance(feed, Mapping):
                raise CalibrationDataError(
                    f"The reader's get_next() returned a {type(feed).__name__}; it must return a dict "
                    "{input name: array} (or None at the end)."
                )
            yield {str(k): _as_array(v, str(k)) for k, v in feed.items()}

    def _count(self) -> int | None:
        try:
            return len(self.reader)
        except (TypeError, NotImplementedError):  # onnxruntime's CalibrationDataReader.__len__ raises the latter
            return None


class CastingReader(CalibrationReader):
    """Another reader's samples with the float arrays of the named inputs converted to a dtype: an
    FP16 model is quantized as FP32 inside, so its samples (FP16 or FP32) are read as FP32."""

    def __init__(self, reader: CalibrationReader, dtypes: Mapping[str, Any]) -> None:
        super().__init__(None)
        self.reader = reader
        self.dtypes = {k: np.dtype(v) for k, v in dtypes.items()}

    def bind(self, input_names: Sequence[str]) -> CalibrationReader:
        self.reader.bind(input_names)
        return super().bind(input_names)

    def _samples(self) -> Iterator[Feed]:
        for feed in self.reader:
            yield {k: v.astype(self.dtypes[k]) if k in self.dtypes and v.dtype.kind == "f" else v
                   for k, v in feed.items()}

    def _count(self) -> int | None:
        try:
            return len(self.reader)
        except TypeError:
            return None


def _with_batch(array: np.ndarray, reader: CalibrationReader, name: str) -> np.ndarray:
    """Quark's PathDataReader adds a missing batch dimension; so do we when the model says so."""
    shapes = getattr(reader, "input_shapes", None) or {}
    shape = shapes.get(name)
    if shape is not None and array.ndim == len(shape) - 1:
        return array[None]
    return array


class RandomReader(CalibrationReader):
    """Random samples shaped like the model inputs (Quark's ``UseRandomData``): for smoke tests
    only — ranges calibrated on noise say little about real data. Seeded (42, as Quark)."""

    def __init__(self, inputs: Sequence[Any], shapes: Mapping[str, Sequence[int]] | None = None,
                 ranges: Mapping[str, Sequence[float]] | None = None, samples: int = 1, seed: int = 42) -> None:
        super().__init__(None)
        self.inputs = list(inputs)
        self.shapes = dict(shapes or {})
        self.ranges = dict(ranges or {})
        self.samples = samples
        self.seed = seed

    def _count(self) -> int:
        return self.samples

    def _shape(self, spec: Any) -> list[int]:
        if spec.name in self.shapes:
            return [int(d) for d in self.shapes[spec.name]]
        # dynamic dimensions as Quark fills them: batch 1, otherwise a small size
        dims = []
        for i, d in enumerate(spec.shape):
            dims.append(d if isinstance(d, int) and d > 0 else (1 if i == 0 else (3 if len(spec.shape) == 4 and i == 1 else 32)))
        return dims

    def _samples(self) -> Iterator[Feed]:
        rng = np.random.default_rng(self.seed)
        for _ in range(self.samples):
            feed = {}
            for spec in self.inputs:
                shape, dtype = self._shape(spec), np.dtype(spec.dtype)
                lo, hi = self.ranges.get(spec.name, (0, 1))
                if dtype.kind in "iu":
                    feed[spec.name] = rng.integers(int(lo), int(hi) + 1, size=shape).astype(dtype)
                else:
                    feed[spec.name] = rng.uniform(lo, hi, size=shape).astype(dtype)
            yield feed


def _existing_folder(folder: str | Path) -> Path:
    path = Path(folder).expanduser()
    if not path.exists():
        raise CalibrationDataError(f"The calibration folder {str(path)!r} does not exist.")
    if not path.is_dir():
        raise CalibrationDataError(f"{str(path)!r} is a file; give the folder that holds the calibration files.")
    return path


def make_reader(
    data: Any,
    *,
    input_names: Sequence[str] | None = None,
    input_shapes: Mapping[str, Sequence[Any]] | None = None,
    limit: int | None = None,
    **options: Any,
) -> CalibrationReader:
    """A :class:`CalibrationReader` for ``data`` (see the module docstring for what is accepted).

    ``input_names`` (the model's) lets single-input data omit names; ``input_shapes`` sets the
    image size and batch splitting; ``options`` go to the reader class (e.g. ``normalize=``).
    """
    if data is None:
        raise CalibrationDataError(
            "No calibration data was given. Static quantization needs a few representative inputs "
            "(100 to 1000 samples is typical): pass an array, a folder or a reader."
        )
    names = list(input_names or [])
    first_shape = next(iter(input_shapes.values())) if input_shapes else None
    if isinstance(data, CalibrationReader):
        reader = data
        if limit is not None:
            reader.limit = limit
    elif hasattr(data, "get_next"):
        reader = ReaderAdapter(data, limit=limit)
    elif isinstance(data, (str, Path)):
        folder = _existing_folder(data)
        if any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.iterdir()):
            reader = ImageFolderReader(folder, limit=limit, **options)
            if first_shape is not None:
                reader.bind_shape(first_shape)
        else:
            reader = NpyFolderReader(folder, limit=limit, **options)
            reader.input_shapes = dict(input_shapes or {})  # type: ignore[attr-defined]
    elif isinstance(data, (np.ndarray, Mapping)) or (
        isinstance(data, (list, tuple)) and data and isinstance(data[0], (np.ndarray, Mapping))
    ):
        batch = options.pop("batch_size", None) or _batch_of(first_shape) or 1
        array = data if not isinstance(data, np.ndarray) else _match_rank(data, first_shape)
        reader = ArrayReader(array, batch_size=batch, limit=limit, **options)
    elif isinstance(data, (list, tuple)) and not data:
        raise CalibrationDataError("The calibration data list is empty.")
    elif isinstance(data, Iterable) or callable(data):
        reader = IterableReader(data, limit=limit, **options)
    else:
        raise CalibrationDataError(
            f"Cannot read calibration data of type {type(data).__name__}; give a numpy array, a list of feed "
            "dicts, a folder path, an iterable, or an object with get_next()/rewind()."
        )
    if names:
        reader.bind(names)
    return reader


def _match_rank(array: np.ndarray, model_shape: Sequence[Any] | None) -> np.ndarray:
    """A single sample given without its batch axis gets one."""
    if model_shape is not None and array.ndim == len(model_shape) - 1:
        return array[None]
    return array
