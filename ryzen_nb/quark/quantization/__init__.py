"""Quark's ``quark.onnx.quantization`` package: the algorithm configs and ``QConfig`` at its top;
``api`` (``ModelQuantizer``), ``quantize`` (``quantize_static``), ``quant_utils`` and ``config``
below it, as in Quark."""

from ryzen_nb.quark.quantization.config.algorithm import (
    AdaQuantConfig,
    AdaRoundConfig,
    AlgoConfig,
    AutoMixprecisionConfig,
    BiasCorrectionConfig,
    CLEConfig,
    GPTQConfig,
    QuarotConfig,
    SmoothQuantConfig,
)
from ryzen_nb.quark.quantization.config.config import QConfig

__all__ = ["AlgoConfig", "SmoothQuantConfig", "CLEConfig", "BiasCorrectionConfig", "GPTQConfig",
           "AutoMixprecisionConfig", "AdaRoundConfig", "AdaQuantConfig", "QuarotConfig", "QConfig"]
