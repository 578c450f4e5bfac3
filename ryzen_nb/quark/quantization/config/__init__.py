"""Quark's config package (``quark.onnx.quantization.config``): ``Config``, ``QConfig``,
``QuantizationConfig``, ``get_default_config``, ``get_default_config_mapping`` and
``DefaultConfigMapping``; the modules ``config``, ``custom_config``, ``data_type``, ``spec``,
``algorithm`` and ``legacy`` mirror Quark's of the same names."""

from ryzen_nb.quark.quantization.config.config import Config, QConfig, QuantizationConfig
from ryzen_nb.quark.quantization.config.presets import (
    DefaultConfigMapping,
    get_default_config,
    get_default_config_mapping,
)

__all__ = ["Config", "QConfig", "QuantizationConfig", "DefaultConfigMapping", "get_default_config",
           "get_default_config_mapping"]
