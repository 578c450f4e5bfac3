"""Quantization: the options schema and presets, configs, the plan → parameters → emit engine,
XINT8 rules, the staged :class:`QuantizationRun`, and the BF16 conversion tool.

The one-call entry point, with the accuracy algorithms, is :func:`ryzen_nb.quantize`
(:mod:`ryzen_nb.pipeline`).
"""

from ryzen_nb.quantization.config import (
    PRESETS,
    Config,
    QuantizationConfig,
    get_default_config,
    preset_names,
    resolve,
)
from ryzen_nb.quantization.run import QuantizationRun, QuantizationSummary

__all__ = [
    "PRESETS",
    "Config",
    "QuantizationConfig",
    "QuantizationRun",
    "QuantizationSummary",
    "get_default_config",
    "preset_names",
    "resolve",
]
