"""ryzen-nb: quantize ONNX models the way AMD Ryzen AI expects, emulate the NPU, compare in Jupyter.

>>> import ryzen_nb
>>> summary = ryzen_nb.quantize("model.onnx", "model_xint8.onnx", "XINT8", calibration_data)  # doctest: +SKIP
>>> program = ryzen_nb.npu.compile(summary.model, target="STX")                               # doctest: +SKIP
>>> result = ryzen_nb.compare("model.onnx", {"XINT8": summary}, held_out, labels=labels)        # doctest: +SKIP
>>> ryzen_nb.ui.dashboard(result)                                                             # doctest: +SKIP

The verbs: :func:`quantize`, :func:`compare`, :mod:`npu` (``compile``, ``NPUSession``,
``estimate_latency``, ``divergence``), :mod:`ui` (widgets). Configs: :func:`get_default_config`,
:class:`QuantizationConfig`, :class:`Config`, :func:`presets`. Scripts written for AMD Quark import
from :mod:`ryzen_nb.quark` instead of ``quark.onnx``.
"""

from __future__ import annotations

import importlib
from typing import Any

from ryzen_nb import formats
from ryzen_nb._version import __version__
from ryzen_nb.errors import (
    CalibrationDataError,
    ConfigError,
    FormatError,
    ModelError,
    ModelNotFoundError,
    RyzenNBError,
    UnknownNameError,
)
from ryzen_nb.pipeline import quantize
from ryzen_nb.quantization import PRESETS, Config, QuantizationConfig, QuantizationSummary, get_default_config

__all__ = [
    "CalibrationDataError",
    "Config",
    "ConfigError",
    "FormatError",
    "ModelError",
    "ModelNotFoundError",
    "QuantizationConfig",
    "QuantizationSummary",
    "RyzenNBError",
    "UnknownNameError",
    "__version__",
    "compare",
    "formats",
    "get_default_config",
    "npu",
    "presets",
    "quantize",
    "quark",
    "sweep",
    "ui",
    "zoo",
]

#: loaded on first use, so ``import ryzen_nb`` stays fast (the emulator, the evaluation layer with
#: its plotly report, the widgets with ipywidgets, the zoo and the Quark surface are not needed to quantize)
_LAZY = {"compare": ("ryzen_nb.evaluation", "compare"), "npu": ("ryzen_nb.npu", None),
         "ui": ("ryzen_nb.ui", None), "zoo": ("ryzen_nb.zoo", None), "quark": ("ryzen_nb.quark", None),
         "evaluation": ("ryzen_nb.evaluation", None), "algorithms": ("ryzen_nb.algorithms", None),
         "sweep": ("ryzen_nb.sweeps", "sweep")}
#: Quark's names, which live in ryzen_nb.quark: a clear error instead of a bare AttributeError
_MOVED_TO_QUARK = {"ModelQuantizer", "QConfig", "QLayerConfig", "QuantType", "ExtendedQuantType", "VitisQuantType",
                   "QuantFormat", "ExtendedQuantFormat", "VitisQuantFormat", "CalibrationMethod", "PowerOfTwoMethod",
                   "CalibMethod", "CLEConfig", "AdaRoundConfig", "AdaQuantConfig", "BiasCorrectionConfig",
                   "AutoMixprecisionConfig", "XINT8_QCONFIG", "A8W8_QCONFIG", "A16W8_QCONFIG", "BF16_QCONFIG",
                   "BFP16_QCONFIG", "Int8Spec", "Int16Spec", "UInt8Spec", "XInt8Spec", "BFloat16Spec", "BFP16Spec"}


def presets() -> Any:
    """The quantization presets as a pandas DataFrame (name, description)."""
    import pandas as pd  # pandas is only needed for this table

    return pd.DataFrame([{"preset": p.name, "description": p.description} for p in PRESETS.values()]).set_index("preset")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = importlib.import_module(module)
        return getattr(value, attribute) if attribute else value
    if name in _MOVED_TO_QUARK:
        raise AttributeError(f"ryzen_nb.{name} is AMD Quark's name and lives in ryzen_nb.quark: "
                             f"`from ryzen_nb.quark import {name}`.")
    raise AttributeError(f"module 'ryzen_nb' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext ryzen_nb``: the magics of :mod:`ryzen_nb.extension`."""
    importlib.import_module("ryzen_nb.extension").load_ipython_extension(ipython)
