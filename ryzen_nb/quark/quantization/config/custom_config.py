"""Quark's presets (``quark.onnx.quantization.config.custom_config``): the legacy ones by name
(``DefaultConfigMapping``, ``get_default_config``, and each as ``<NAME>_CONFIG``, e.g.
``XINT8_CONFIG``, ``A8W8_ADAROUND_CONFIG``), the fine-tuning and block parameter dicts
(``DEFAULT_ADAROUND_PARAMS``...), and the ``QConfig`` presets (``XINT8_QCONFIG``, ``A8W8_QCONFIG``,
``BF16_QCONFIG``...).

Note a difference Quark has too: ``XINT8_QCONFIG`` quantizes activations as int8, the legacy
``XINT8`` as uint8 with zero point 128; and ``Int8Spec`` calibrates with Percentile where the legacy
``A8W8`` uses MinMax.
"""

from __future__ import annotations

from typing import Any

from ryzen_nb.quantization.config import QuantizationConfig
from ryzen_nb.quark.quantization.config.algorithm import AdaQuantConfig, AdaRoundConfig
from ryzen_nb.quark.quantization.config.config import QConfig
from ryzen_nb.quark.quantization.config.presets import (
    DEFAULT_ADAQUANT_PARAMS,
    DEFAULT_ADAROUND_PARAMS,
    DEFAULT_BFP_PARAMS,
    DEFAULT_MICROEXPONENTS_PARAMS,
    DEFAULT_MICROSCALING_PARAMS,
    DefaultConfigMapping,
    get_default_config,
    get_default_config_mapping,
)
from ryzen_nb.quark.quantization.config.spec import (
    BFloat16Spec,
    BFP16Spec,
    Int8Spec,
    Int16Spec,
    QLayerConfig,
    XInt8Spec,
)

# the legacy presets under Quark's module-level names: XINT8_CONFIG, A8W8_ADAROUND_CONFIG, ...
_LEGACY: dict[str, QuantizationConfig] = {f"{name}_CONFIG": config for name, config in DefaultConfigMapping.items()}
globals().update(_LEGACY)
# Quark names this one at module level only, outside DefaultConfigMapping: XINT8 with AdaRound on the
# weights while every activation stays float (custom_config.py of amd-quark 0.13)
XINT8_WEIGHTSONLY_ADAROUND_CONFIG = get_default_config("XINT8_ADAROUND")
XINT8_WEIGHTSONLY_ADAROUND_CONFIG.extra_options["WeightsOnly"] = True

adaround_algo = AdaRoundConfig()
adaquant_algo = AdaQuantConfig()

_A8W8_OPTIONS: dict[str, Any] = {"ForceQuantizeNoInputCheck": True, "AlignSlice": False, "FoldRelu": True,
                                 "AlignConcat": True}
_A16W8_OPTIONS: dict[str, Any] = {**_A8W8_OPTIONS, "AlignEltwiseQuantType": True}


def _qconfig(activation: Any, weight: Any, options: dict[str, Any], algorithm: Any = None) -> QConfig:
    return QConfig(QLayerConfig(activation=activation, weight=weight),
                   algo_config=[algorithm] if algorithm is not None else None, extra_options=dict(options))


_XINT8_OPTIONS = {"ForceQuantizeNoInputCheck": True}
XINT8_QCONFIG = _qconfig(XInt8Spec(), XInt8Spec(), _XINT8_OPTIONS)
XINT8_ADAROUND_QCONFIG = _qconfig(XInt8Spec(), XInt8Spec(), _XINT8_OPTIONS, adaround_algo)
XINT8_ADAQUANT_QCONFIG = _qconfig(XInt8Spec(), XInt8Spec(), _XINT8_OPTIONS, adaquant_algo)
# the legacy VINT8 as a QConfig: int8 power-of-two scales without the NPU CNN rules (for VAIML)
VINT8_QCONFIG = _qconfig(XInt8Spec(), XInt8Spec(), {
    "OptimizeModel": False, "EnableNPUCnn": False,
    **{k: v for k, v in DefaultConfigMapping["VINT8"].extra_options.items() if k != "ActivationSymmetric"}})
A8W8_QCONFIG = _qconfig(Int8Spec(), Int8Spec(), _A8W8_OPTIONS)
A8W8_ADAROUND_QCONFIG = _qconfig(Int8Spec(), Int8Spec(), _A8W8_OPTIONS, adaround_algo)
A8W8_ADAQUANT_QCONFIG = _qconfig(Int8Spec(), Int8Spec(), _A8W8_OPTIONS, adaquant_algo)
A16W8_QCONFIG = _qconfig(Int16Spec(), Int8Spec(), _A16W8_OPTIONS)
A16W8_ADAROUND_QCONFIG = _qconfig(Int16Spec(), Int8Spec(), _A16W8_OPTIONS, adaround_algo)
A16W8_ADAQUANT_QCONFIG = _qconfig(Int16Spec(), Int8Spec(), _A16W8_OPTIONS, adaquant_algo)
BF16_QCONFIG = _qconfig(BFloat16Spec(), BFloat16Spec(), {"ForceQuantizeNoInputCheck": True})
BFP16_QCONFIG = _qconfig(BFP16Spec(), BFP16Spec(), {})

__all__ = [
    "DEFAULT_ADAROUND_PARAMS", "DEFAULT_ADAQUANT_PARAMS", "DEFAULT_BFP_PARAMS", "DEFAULT_MICROEXPONENTS_PARAMS",
    "DEFAULT_MICROSCALING_PARAMS", "DefaultConfigMapping", "get_default_config", "get_default_config_mapping",
    "QConfig", "QuantizationConfig", "adaround_algo", "adaquant_algo",
    "XINT8_QCONFIG", "XINT8_ADAROUND_QCONFIG", "XINT8_ADAQUANT_QCONFIG", "VINT8_QCONFIG", "A8W8_QCONFIG",
    "A8W8_ADAROUND_QCONFIG", "A8W8_ADAQUANT_QCONFIG", "A16W8_QCONFIG", "A16W8_ADAROUND_QCONFIG",
    "A16W8_ADAQUANT_QCONFIG", "BF16_QCONFIG", "BFP16_QCONFIG", "XINT8_WEIGHTSONLY_ADAROUND_CONFIG", *_LEGACY,
]
