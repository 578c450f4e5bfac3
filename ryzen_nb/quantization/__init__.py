"""Quantization: configs and presets, the QDQ quantizer, and the BF16 conversion tool."""

from ryzen_nb.quantization.config import (
    PRESETS,
    Config,
    QuantizationConfig,
    get_default_config,
    preset_names,
    resolve,
)
from ryzen_nb.quantization.qconfig import *  # noqa: F403  (Quark's QConfig API)
from ryzen_nb.quantization.qconfig import __all__ as _qconfig_all
from ryzen_nb.quantization.quantizer import ModelQuantizer, QuantizationSummary, quantize
from ryzen_nb.quantization.types import (
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
    "PRESETS",
    "CalibrationMethod",
    "Config",
    "ExtendedQuantFormat",
    "ExtendedQuantType",
    "ModelQuantizer",
    "PowerOfTwoMethod",
    "QuantFormat",
    "QuantType",
    "QuantizationConfig",
    "QuantizationSummary",
    "VitisQuantFormat",
    "VitisQuantType",
    "get_default_config",
    "preset_names",
    "quantize",
    "resolve",
    *_qconfig_all,
]
