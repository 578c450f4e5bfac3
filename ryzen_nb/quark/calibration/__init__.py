"""Quark's ``quark.onnx.calibration``: the calibration method enums and data readers."""

from ryzen_nb.quark.calibration.data_readers import CachedDataReader, PathDataReader, RandomDataReader
from ryzen_nb.quark.types import ExtendedCalibrationMethod, Int16Method, LayerWiseMethod, PowerOfTwoMethod

__all__ = ["Int16Method", "PowerOfTwoMethod", "LayerWiseMethod", "ExtendedCalibrationMethod", "CachedDataReader",
           "RandomDataReader", "PathDataReader"]
