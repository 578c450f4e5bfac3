"""Quark's data readers (``quark.onnx.calibration.data_readers``; ``quark.onnx.quant_utils`` in
Quark 0.x) on ryzen-nb's readers, which check every sample against the model."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ryzen_nb.calibration.readers import NpyFolderReader, RandomReader, ReaderAdapter
from ryzen_nb.errors import ConfigError
from ryzen_nb.graph.io import ModelLike, load_model
from ryzen_nb.graph.prepare import input_specs

__all__ = ["CachedDataReader", "RandomDataReader", "PathDataReader"]


class CachedDataReader(ReaderAdapter):
    """Wraps a reader (anything with ``get_next``) so it can be read more than once, optionally
    limited to ``data_size`` samples. Quark's layout and FP16 conversions are not done here:
    asking for them is an error (ryzen-nb quantizes the model in the layout and type it has)."""

    def __init__(self, dr: Any, data_size: int | None = None, convert_nchw_to_nhwc: bool = False,
                 quantize_fp16: bool = False) -> None:
        if convert_nchw_to_nhwc or quantize_fp16:
            what = "convert_nchw_to_nhwc" if convert_nchw_to_nhwc else "quantize_fp16"
            raise ConfigError(f"CachedDataReader({what}=True) converts data for a Quark feature ryzen-nb lacks; "
                              f"leave {what} False.")
        super().__init__(dr, limit=data_size)

    def reset_iter(self) -> None:
        """Quark's name of :meth:`rewind`."""
        self.rewind()


class RandomDataReader(RandomReader):
    """Random samples shaped like ``model_input``'s inputs (Quark's ``UseRandomData``): for smoke
    tests only. ``input_shape`` fixes dynamic shapes (``{"input": [1, 3, 224, 224]}``),
    ``input_data_range`` the value range per input (``{"input": [0, 255]}``; default [0, 1))."""

    def __init__(self, model_input: ModelLike, input_shape: Mapping[str, Sequence[int]] | None = None,
                 input_data_range: Mapping[str, Sequence[float]] | None = None) -> None:
        super().__init__(input_specs(load_model(model_input)), shapes=input_shape, ranges=input_data_range)


class PathDataReader(NpyFolderReader):
    """Samples from a folder of ``.npy`` files for ``model_input`` (Quark's
    ``calibration_data_path``): one file per sample for a single-input model, or one sub-folder
    per input named after it. A missing batch axis is added, as Quark does; ``input_shape`` gives
    the single input's shape where the model leaves it dynamic."""

    def __init__(self, model_input: ModelLike, data_path: str | Path, input_shape: Sequence[int] | None = None) -> None:
        super().__init__(data_path)
        specs = input_specs(load_model(model_input))
        self.bind([s.name for s in specs])
        shapes = {s.name: list(s.shape) for s in specs}
        if input_shape and len(specs) == 1:
            shapes[specs[0].name] = list(input_shape)
        self.input_shapes = shapes

    def _samples(self) -> Iterator[dict[str, np.ndarray]]:
        for feed in super()._samples():  # Quark adds the batch axis a saved sample lacks
            yield {name: value[None] if name in self.input_shapes and value.ndim == len(self.input_shapes[name]) - 1
                   else value for name, value in feed.items()}
