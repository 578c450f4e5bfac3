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
    A8W8_QCONFIG,
    A16W8_QCONFIG,
    BF16_QCONFIG,
    BFP16_QCONFIG,
    XINT8_QCONFIG,
    AdaQuantConfig,
    AdaRoundConfig,
    AutoMixprecisionConfig,
    BFloat16Spec,
    BFP16Spec,
    BiasCorrectionConfig,
    CalibMethod,
    CalibrationMethod,
    CLEConfig,
    Config,
    ExtendedQuantFormat,
    ExtendedQuantType,
    Int8Spec,
    Int16Spec,
    ModelQuantizer,
    PowerOfTwoMethod,
    QConfig,
    QLayerConfig,
    QuantFormat,
    QuantizationConfig,
    QuantizationSummary,
    QuantType,
    UInt8Spec,
    XInt8Spec,
    get_default_config,
    quantize,
)

__all__ = [
    "A8W8_QCONFIG",
    "A16W8_QCONFIG",
    "BF16_QCONFIG",
    "BFP16_QCONFIG",
    "XINT8_QCONFIG",
    "AdaQuantConfig",
    "AdaRoundConfig",
    "AutoMixprecisionConfig",
    "BFloat16Spec",
    "BFP16Spec",
    "BiasCorrectionConfig",
    "CalibMethod",
    "CLEConfig",
    "Int8Spec",
    "Int16Spec",
    "QConfig",
    "QLayerConfig",
    "UInt8Spec",
    "XInt8Spec",
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


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - IPython's InteractiveShell
    """``%load_ext ryzen_nb``: the magics of :mod:`ryzen_nb.extension`."""
    from ryzen_nb.extension import load_ipython_extension as load

    load(ipython)
