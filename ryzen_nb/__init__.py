"""ryzen-nb: quantize ONNX models the way AMD Ryzen AI expects, emulate the NPU, compare in Jupyter.

>>> import ryzen_nb
>>> summary = ryzen_nb.quantize("model.onnx", "model_xint8.onnx", "XINT8", calibration_data)  # doctest: +SKIP
"""

from __future__ import annotations

__version__ = "0.1.0"

from ryzen_nb import formats
from ryzen_nb.errors import (
    CalibrationDataError,
    ConfigError,
    FormatError,
    ModelError,
    ModelNotFoundError,
    RyzenNBError,
    UnknownNameError,
)
from ryzen_nb.quantization import (
    CalibrationMethod,
    Config,
    ExtendedQuantFormat,
    ExtendedQuantType,
    ModelQuantizer,
    PowerOfTwoMethod,
    QuantFormat,
    QuantizationConfig,
    QuantizationSummary,
    QuantType,
    get_default_config,
    quantize,
)

__all__ = [
    "CalibrationDataError",
    "CalibrationMethod",
    "Config",
    "ConfigError",
    "ExtendedQuantFormat",
    "ExtendedQuantType",
    "FormatError",
    "ModelError",
    "ModelNotFoundError",
    "ModelQuantizer",
    "PowerOfTwoMethod",
    "QuantFormat",
    "QuantType",
    "QuantizationConfig",
    "QuantizationSummary",
    "RyzenNBError",
    "UnknownNameError",
    "__version__",
    "formats",
    "get_default_config",
    "quantize",
]
