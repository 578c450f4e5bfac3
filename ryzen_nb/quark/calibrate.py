"""``quark.onnx.calibrate``, Quark 0.x's home of the calibration method enums (now
:mod:`ryzen_nb.quark.calibration`)."""

from ryzen_nb.quark.types import Int16Method, LayerWiseMethod, PowerOfTwoMethod

__all__ = ["PowerOfTwoMethod", "Int16Method", "LayerWiseMethod"]
