"""``quark.onnx.quantize``, Quark 0.x's home of ``quantize_static`` (now
:mod:`ryzen_nb.quark.quantization.quantize`)."""

from ryzen_nb.quark.quantization.quantize import quantize_dynamic, quantize_static

__all__ = ["quantize_static", "quantize_dynamic"]
