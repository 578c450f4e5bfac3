"""Quark's legacy config class (``quark.onnx.quantization.config.legacy``): ryzen-nb's
:class:`~ryzen_nb.quantization.config.QuantizationConfig`, which has Quark's fields."""

from ryzen_nb.quantization.config import QuantizationConfig

__all__ = ["QuantizationConfig"]
