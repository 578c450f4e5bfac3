"""AMD Quark's ONNX API on ryzen-nb: a script written for ``quark.onnx`` runs with its imports
changed to ``ryzen_nb.quark``.

>>> from ryzen_nb.quark import ModelQuantizer, QConfig, QLayerConfig, Int8Spec   # was: from quark.onnx import ...
>>> config = QConfig(QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()))
>>> ModelQuantizer(config).quantize_model("model.onnx", "model_a8w8.onnx", reader)  # doctest: +SKIP

Everything here is a thin adapter onto ryzen-nb's own API (:func:`ryzen_nb.quantize`, its
:class:`~ryzen_nb.quantization.config.QuantizationConfig` and presets); no quantization logic lives
in this package, and nothing else in ryzen-nb imports it.
"""

from ryzen_nb.quantization.config import Config, QuantizationConfig, get_default_config
from ryzen_nb.quark.qconfig import *  # noqa: F403  (Quark's QConfig API)
from ryzen_nb.quark.qconfig import __all__ as _qconfig_all
from ryzen_nb.quark.quantizer import ModelQuantizer
from ryzen_nb.quark.types import (
    CalibrationMethod,
    ExtendedQuantFormat,
    ExtendedQuantType,
    PowerOfTwoMethod,
    QuantFormat,
    QuantType,
    VitisQuantFormat,
    VitisQuantType,
)

__all__ = [
    "CalibrationMethod",
    "Config",
    "ExtendedQuantFormat",
    "ExtendedQuantType",
    "ModelQuantizer",
    "PowerOfTwoMethod",
    "QuantFormat",
    "QuantType",
    "QuantizationConfig",
    "VitisQuantFormat",
    "VitisQuantType",
    "get_default_config",
    *_qconfig_all,
]
