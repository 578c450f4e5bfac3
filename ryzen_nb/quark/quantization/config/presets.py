"""Quark's legacy presets by name (``DefaultConfigMapping``, ``get_default_config``), built on
ryzen-nb's presets: a Quark name ryzen-nb has is that preset; ``<NAME>_ADAROUND`` / ``_ADAQUANT``
add fine-tuning with Quark's preset parameters; the few presets ryzen-nb has no counterpart of are
written here as configs. Those asking for something ryzen-nb lacks (dynamic quantization,
MatMulNBits) build, and quantizing with them is an error that says what is missing.

Kept apart from :mod:`.custom_config` (which also builds the ``QConfig`` presets) so that
:class:`~.config.QConfig` can read the mapping without an import cycle.
"""

from __future__ import annotations

import copy
from typing import Any

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.quantization.config import PRESETS, QuantizationConfig, preset_name
from ryzen_nb.quantization.config import get_default_config as _preset
from ryzen_nb.quantization.options import FINETUNE_ALGORITHM_DEFAULTS, default

__all__ = ["DEFAULT_ADAROUND_PARAMS", "DEFAULT_ADAQUANT_PARAMS", "DEFAULT_BFP_PARAMS", "DEFAULT_MICROEXPONENTS_PARAMS",
           "DEFAULT_MICROSCALING_PARAMS", "DefaultConfigMapping", "get_default_config", "get_default_config_mapping"]


def _finetune_params(algorithm: str, iterations: int) -> dict[str, Any]:
    """The FastFinetune dict of Quark's ``_ADAROUND`` / ``_ADAQUANT`` presets: its preset values
    (1000 samples, batches of 2, early stop) over the options' defaults."""
    return {"DataSize": 1000, "FixedSeed": default("FixedSeed", "FastFinetune"), "BatchSize": 2,
            "NumIterations": iterations, "LearningRate": FINETUNE_ALGORITHM_DEFAULTS[algorithm]["LearningRate"],
            "OptimAlgorithm": algorithm, "OptimDevice": default("OptimDevice", "FastFinetune"),
            "InferDevice": default("InferDevice", "FastFinetune"), "EarlyStop": True}


DEFAULT_ADAROUND_PARAMS = _finetune_params("adaround", FINETUNE_ALGORITHM_DEFAULTS["adaround"]["NumIterations"])
DEFAULT_ADAQUANT_PARAMS = _finetune_params("adaquant", 1000)  # Quark's presets run 1000 (its AdaQuantConfig 3000)
DEFAULT_BFP_PARAMS = _preset("BFP16").extra_options["BFPAttributes"]
DEFAULT_MICROEXPONENTS_PARAMS = _preset("MX6").extra_options["BFPAttributes"]
DEFAULT_MICROSCALING_PARAMS = _preset("MXINT8").extra_options["MXAttributes"]

#: Quark's names of ryzen-nb presets (the others are spelled alike)
_ALIASES = {"S8S8_AAWS": "S8S8", "U8S8_AAWS": "U8S8"}
_ADAROUND = ("XINT8", "S8S8_AAWS", "U8S8_AAWS", "S16S8_ASWS", "A8W8", "A16W8", "U16S8_AAWS")
_ADAQUANT = _ADAROUND + ("FP16", "BF16", "BFP16", "MX4", "MX6", "MX9", "MXFP8E5M2", "MXFP8E4M3", "MXFP6E3M2",
                         "MXFP6E2M3", "MXFP4E2M1", "MXINT8", "BF16_MIXED_BFP16", "BF16_MIXED_MXINT8")


def _with_finetune(qc: QuantizationConfig, params: dict[str, Any]) -> QuantizationConfig:
    qc = copy.deepcopy(qc)
    qc.include_fast_ft = True
    qc.extra_options["FastFinetune"] = dict(params)
    return qc


def _mixed(activation: str, target: str, attributes: tuple[str, dict[str, Any]], dual: bool) -> QuantizationConfig:
    """Quark's BF16_MIXED_* presets: BF16, with the layers switched to a block type."""
    amp = {"ActTargetQuantType": target, "WeightTargetQuantType": target, "OutputIndex": 0}
    if dual:
        amp["DualQuantNodes"] = True
    return QuantizationConfig(activation_type=activation, weight_type=activation, include_auto_mp=True,
                              extra_options={"ActivationSymmetric": True, "QuantizeBias": False, "DedicateDQNode": True,
                                             "CalibDataSize": 1, "AutoMixprecision": amp,
                                             attributes[0]: dict(attributes[1])})


def _accurate(activation: str, weight: str, transformer: bool) -> QuantizationConfig:
    """Quark's *_ACCURATE presets: Percentile 99.9999 and AdaRound."""
    extra: dict[str, Any] = {"Percentile": 99.9999, "FastFinetune": dict(DEFAULT_ADAROUND_PARAMS)}
    if not transformer:
        extra["ForceQuantizeNoInputCheck"] = True
    return QuantizationConfig(calibrate_method="Percentile", activation_type=activation, weight_type=weight,
                              enable_npu_transformer=transformer, include_fast_ft=True, extra_options=extra)


def _quark_only() -> dict[str, QuantizationConfig]:
    """The presets of Quark's mapping that ryzen-nb's preset table does not hold."""
    bfp = ("BFPAttributes", DEFAULT_BFP_PARAMS)
    mx = ("MXAttributes", DEFAULT_MICROSCALING_PARAMS)
    mixed_bfp, mixed_mx = _mixed("QBFloat16", "QBFP", bfp, True), _mixed("QBFloat16", "QMX", mx, True)
    no_dual_bfp = _mixed("QBFloat16", "QBFP", bfp, False)  # Quark's BF16_MIXED_BFP16_ADAQUANT has no DualQuantNodes
    return {
        "UINT8_DYNAMIC_QUANT": QuantizationConfig(weight_type="QUInt8", use_dynamic_quant=True),
        "VINT8": QuantizationConfig(
            calibrate_method="MinMSE", activation_type="QInt8", weight_type="QInt8", optimize_model=False,
            extra_options={"ActivationSymmetric": True, "UseRandomData": True, "ConvertBNToConv": True,
                           "ConvertSigmoidToHardSigmoid": False, "ConvertClipToRelu": True, "ConvertSplitToSlice": True,
                           "SplitLargeKernelPool": False, "ReplaceClip6Relu": True,
                           "ConvertReduceMeanToGlobalAvgPool": False, "RemoveQDQConvClip": False,
                           "RemoveQDQConvPRelu": False, "RemoveQDQConvRelu": False, "RemoveQDQConvLeakyRelu": False,
                           "Int32Bias": False, "DedicatedQDQPair": True, "QuantizeAllOpTypes": True}),
        "S16S16_MIXED_S8S8": QuantizationConfig(
            calibrate_method="Percentile", activation_type="QInt16", weight_type="QInt16", include_auto_mp=True,
            extra_options={"Percentile": 99.9999, "Int32Bias": False, "Int16Bias": False,
                           "ForceQuantizeNoInputCheck": True,
                           "AutoMixprecision": {"ActTargetQuantType": "QInt8", "WeightTargetQuantType": "QInt8",
                                                "OutputIndex": 0}}),
        "BF16_MIXED_BFP16": mixed_bfp,
        "BF16_MIXED_BFP16_ADAQUANT": _with_finetune(no_dual_bfp, DEFAULT_ADAQUANT_PARAMS),
        "BF16_MIXED_MXINT8": mixed_mx,
        "BF16_MIXED_MXINT8_ADAQUANT": _with_finetune(mixed_mx, DEFAULT_ADAQUANT_PARAMS),
        "INT8_CNN_ACCURATE": _accurate("QUInt8", "QInt8", False),
        "INT16_CNN_ACCURATE": _accurate("QUInt16", "QInt16", False),
        "INT8_TRANSFORMER_ACCURATE": _accurate("QUInt8", "QInt8", True),
        "INT16_TRANSFORMER_ACCURATE": _accurate("QUInt16", "QInt16", True),
        "MATMUL_NBITS": QuantizationConfig(extra_options={
            "UseMatMulNBits": True,
            "MatMulNBitsParams": {"GroupSize": 128, "Symmetric": True, "Bits": 4, "AccuracyLevel": 1}}),
    }


def _mapping() -> dict[str, QuantizationConfig]:
    only = _quark_only()
    bases = [name for name in _ADAQUANT if name not in only] + [
        "U8U8_AAWA", "BF16_BFP16", "BF16_MXINT8", "MX9_INT8", "INT8_CNN_DEFAULT", "INT16_CNN_DEFAULT",
        "INT8_TRANSFORMER_DEFAULT", "INT16_TRANSFORMER_DEFAULT"]
    mapping = {name: _preset(_ALIASES.get(name, name)) for name in bases}
    mapping.update({k: v for k, v in only.items() if not k.endswith("_ADAQUANT")})
    for name in _ADAROUND:
        mapping[f"{name}_ADAROUND"] = _with_finetune(mapping[name], DEFAULT_ADAROUND_PARAMS)
    for name in _ADAQUANT:
        mapping[f"{name}_ADAQUANT"] = only.get(f"{name}_ADAQUANT") or _with_finetune(mapping[name],
                                                                                  DEFAULT_ADAQUANT_PARAMS)
    return mapping


#: every preset name of Quark's ``DefaultConfigMapping`` -> its config (copied by get_default_config)
DefaultConfigMapping: dict[str, QuantizationConfig] = _mapping()


def get_default_config_mapping() -> dict[str, QuantizationConfig]:
    return DefaultConfigMapping


def get_default_config(config_name: str) -> QuantizationConfig:
    """A fresh copy of Quark's preset ``config_name`` (``"XINT8"``, ``"A8W8_ADAROUND"``, ``"BF16"``...).

    ryzen-nb's own preset names (``"S8S8"``, lower case) work too. Unlike Quark's bare
    ``ValueError``, an unknown name is an error listing Quark's names, closest first."""
    if config_name in DefaultConfigMapping:
        return copy.deepcopy(DefaultConfigMapping[config_name])
    try:
        return _preset(preset_name(config_name))
    except UnknownNameError:
        raise UnknownNameError("preset", config_name, list(DefaultConfigMapping) + [
            p for p in PRESETS if p not in DefaultConfigMapping]) from None
