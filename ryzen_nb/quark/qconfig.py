"""Quark's newer config API in one import: ``QConfig``, the specs, data types, algorithm configs
and ``*_QCONFIG`` presets. They live in the modules that mirror Quark's layout
(:mod:`ryzen_nb.quark.quantization.config.config`, ``.spec``, ``.data_type``, ``.algorithm``,
``.custom_config``); this module gathers them, as ``ryzen_nb.quark`` does."""

from ryzen_nb.quark.quantization.config.algorithm import *  # noqa: F403
from ryzen_nb.quark.quantization.config.algorithm import __all__ as _algorithms
from ryzen_nb.quark.quantization.config.config import QConfig
from ryzen_nb.quark.quantization.config.custom_config import (
    A8W8_ADAQUANT_QCONFIG,
    A8W8_ADAROUND_QCONFIG,
    A8W8_QCONFIG,
    A16W8_ADAQUANT_QCONFIG,
    A16W8_ADAROUND_QCONFIG,
    A16W8_QCONFIG,
    BF16_QCONFIG,
    BFP16_QCONFIG,
    VINT8_QCONFIG,
    XINT8_ADAQUANT_QCONFIG,
    XINT8_ADAROUND_QCONFIG,
    XINT8_QCONFIG,
)
from ryzen_nb.quark.quantization.config.data_type import *  # noqa: F403
from ryzen_nb.quark.quantization.config.data_type import __all__ as _data_types
from ryzen_nb.quark.quantization.config.spec import *  # noqa: F403
from ryzen_nb.quark.quantization.config.spec import __all__ as _specs

__all__ = ["QConfig", "XINT8_QCONFIG", "XINT8_ADAROUND_QCONFIG", "XINT8_ADAQUANT_QCONFIG", "VINT8_QCONFIG",
           "A8W8_QCONFIG", "A8W8_ADAROUND_QCONFIG", "A8W8_ADAQUANT_QCONFIG", "A16W8_QCONFIG", "A16W8_ADAROUND_QCONFIG",
           "A16W8_ADAQUANT_QCONFIG", "BF16_QCONFIG", "BFP16_QCONFIG", *_algorithms, *_data_types, *_specs]
