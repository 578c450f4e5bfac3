"""Calibration: data readers, feed checks, data recipes (source -> preprocessing -> reader, see
:mod:`ryzen_nb.calibration.recipe`), streaming statistics and the range/scale methods."""

from ryzen_nb.calibration.methods import METHODS, CalibrationMethod, QuantParams, get_method, pow2_scale_for_values
from ryzen_nb.calibration.readers import (
    ArrayReader,
    CalibrationReader,
    ImageFolderReader,
    IterableReader,
    NpyFolderReader,
    make_reader,
)
from ryzen_nb.calibration.recipe import ImageOptions, ModelTarget, PreparedData, Recipe, TextOptions
from ryzen_nb.calibration.runner import CalibrationResult, collect_statistics
from ryzen_nb.calibration.stats import TensorStats
from ryzen_nb.calibration.validation import check_feed

__all__ = [
    "METHODS",
    "ArrayReader",
    "CalibrationMethod",
    "CalibrationReader",
    "CalibrationResult",
    "ImageFolderReader",
    "ImageOptions",
    "IterableReader",
    "ModelTarget",
    "NpyFolderReader",
    "PreparedData",
    "QuantParams",
    "Recipe",
    "TensorStats",
    "TextOptions",
    "check_feed",
    "collect_statistics",
    "get_method",
    "make_reader",
    "pow2_scale_for_values",
]
