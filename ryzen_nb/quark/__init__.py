"""AMD Quark's ONNX API on ryzen-nb: a script written for ``quark.onnx`` runs with the text
``quark.onnx`` replaced by ``ryzen_nb.quark``.

>>> from ryzen_nb.quark import ModelQuantizer                          # was: from quark.onnx import ...
>>> from ryzen_nb.quark.quantization.config import Config, get_default_config
>>> quantizer = ModelQuantizer(Config(global_quant_config=get_default_config("XINT8")))
>>> quantizer.quantize_model("model.onnx", "model_xint8.onnx", reader)  # doctest: +SKIP

The package mirrors Quark's public module layout — ``quantization.config.{config, custom_config,
data_type, spec, algorithm}``, ``quantization.{api, quantize, quant_utils}``, ``calibration``,
``operators.custom_ops``, ``utils.deploy_utils``, ``tools.*`` — and the Quark 0.x spellings the
Ryzen AI examples use (``quant_utils``, ``quantize``, ``calibrate``). Everything is a thin adapter
onto ryzen-nb's own API (:func:`ryzen_nb.quantize`, its configs and presets, its readers and
tools): no quantization logic lives here, and nothing else in ryzen-nb imports this package.
What differs from Quark on purpose is listed in the README ("Scripts written for AMD Quark").
"""

from onnxruntime.quantization import CalibraterBase, CalibrationDataReader, MinMaxCalibrater, QuantizationMode
from onnxruntime.quantization.quant_utils import write_calibration_table

from ryzen_nb.quark.calibration import (
    CachedDataReader,
    ExtendedCalibrationMethod,
    Int16Method,
    LayerWiseMethod,
    PathDataReader,
    PowerOfTwoMethod,
    RandomDataReader,
)
from ryzen_nb.quark.operators.custom_ops import _COP_DOMAIN, _COP_VERSION, get_library_path
from ryzen_nb.quark.qconfig import *  # noqa: F403  (QConfig, specs, data types, algorithms, *_QCONFIG)
from ryzen_nb.quark.qconfig import __all__ as _qconfig_all
from ryzen_nb.quark.quantization.api import ModelQuantizer
from ryzen_nb.quark.quantization.config import Config, QuantizationConfig, get_default_config
from ryzen_nb.quark.quantization.quantize import quantize_dynamic, quantize_static
from ryzen_nb.quark.types import (
    CalibrationMethod,
    ExtendedQuantFormat,
    ExtendedQuantType,
    QuantFormat,
    QuantType,
    VitisQuantFormat,
    VitisQuantType,
)
from ryzen_nb.quark.utils.deploy_utils import dump_model

__all__ = [
    "CalibraterBase", "CalibrationDataReader", "CalibrationMethod", "MinMaxCalibrater", "QuantizationMode",
    "QuantFormat", "QuantType", "write_calibration_table", "Int16Method", "PowerOfTwoMethod", "LayerWiseMethod",
    "ExtendedCalibrationMethod", "CachedDataReader", "RandomDataReader", "PathDataReader", "ExtendedQuantType",
    "ExtendedQuantFormat", "VitisQuantType", "VitisQuantFormat", "quantize_static", "quantize_dynamic",
    "ModelQuantizer", "Config", "QuantizationConfig", "get_default_config", "dump_model", "_COP_DOMAIN",
    "_COP_VERSION", "get_library_path", *_qconfig_all,
]
