"""Configs: presets as data, Quark-compatible fields, validation with suggestions, round trips."""

from __future__ import annotations

import json

import pytest

import ryzen_nb
from ryzen_nb import Config, QuantizationConfig, get_default_config
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.quantization import PRESETS, resolve

ISSUE_PRESETS = ["XINT8", "A8W8", "A16W8", "BF16", "BFP16", "MXINT8", "MXFP8E4M3", "MXFP8E5M2", "MXFP6E3M2",
                 "MXFP6E2M3", "MXFP4E2M1", "MX4", "MX6", "MX9", "FP16", "S8S8", "U8S8"]


def test_every_preset_exists_and_resolves() -> None:
    assert set(ISSUE_PRESETS) <= set(PRESETS)
    expected_formats = {"XINT8": ("uint8", "int8"), "A8W8": ("int8", "int8"), "A16W8": ("int16", "int8"),
                        "BF16": ("bfloat16", "bfloat16"), "BFP16": ("BFP16", "BFP16"), "MX6": ("MX6", "MX6"),
                        "MXFP4E2M1": ("MXFP4E2M1", "MXFP4E2M1"), "FP16": ("float16", "float16")}
    for name in ISSUE_PRESETS:
        settings = resolve(get_default_config(name))
        assert settings.preset == name
        if name in expected_formats:
            assert (settings.activation.format, settings.weight.format) == expected_formats[name]


def test_xint8_semantics() -> None:
    s = resolve("XINT8")
    assert s.activation.power_of_two and s.weight.power_of_two and s.activation.method == "MinMSE"
    assert s.activation.symmetric and not s.weight.per_channel
    assert s.bias == "weight"  # int8 power-of-two bias (A10, docs/npu-numerics.md#xint8-definition)
    assert s.fold_activations and s.npu_legality and s.dpu_rewrites["ConvertLeakyReluToDPUVersion"]
    a8 = resolve("A8W8")
    assert a8.bias == "int32" and not a8.activation.power_of_two and not a8.align_slice and a8.fold_activations


def test_quark_style_editing_and_enums() -> None:
    from onnxruntime.quantization import CalibrationMethod as OrtMethod
    from onnxruntime.quantization import QuantType as OrtType

    qc = get_default_config("A8W8")
    qc.activation_type = OrtType.QUInt8  # onnxruntime's enum works too
    qc.calibrate_method = OrtMethod.Percentile
    qc.extra_options["Percentile"] = 99.99
    qc.nodes_to_exclude = ["fc"]
    assert qc.activation_type == "QUInt8" and qc.calibrate_method == "Percentile"
    s = resolve(Config(global_quant_config=qc))
    assert s.activation.format == "uint8" and s.method_options["percentile"] == 99.99 and s.exclude_nodes == ["fc"]
    qc2 = QuantizationConfig(calibrate_method=ryzen_nb.quark.PowerOfTwoMethod.MinMSE,
                             activation_type=ryzen_nb.quark.QuantType.QUInt8, weight_type=ryzen_nb.quark.QuantType.QInt8,
                             enable_npu_cnn=True,
                             extra_options={"ActivationSymmetric": True, "ForceQuantizeNoInputCheck": True})
    assert resolve(qc2).preset == "XINT8"  # written out by hand, it is still the XINT8 preset
    qc2.extra_options["BiasCorrection"] = True
    assert resolve(qc2).preset is None  # modified: a custom config


def test_options_the_npu_cnn_flow_cannot_honour_are_errors_not_ignored() -> None:
    qc = get_default_config("XINT8")
    qc.per_channel = True  # was ignored: the model came out per tensor without a word
    with pytest.raises(ConfigError, match="per_channel=True is not possible with enable_npu_cnn"):
        resolve(qc)
    qc = get_default_config("A8W8")
    qc.per_channel = True
    assert resolve(qc).weight.per_channel
    qc.reduce_range = True
    with pytest.raises(ConfigError, match="reduce_range"):
        resolve(qc)


def test_unknown_names_suggest_the_closest() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'XINT8'"):
        get_default_config("XIN8")
    qc = get_default_config("XINT8")
    qc.extra_options["ActivationSymetric"] = True
    with pytest.raises(UnknownNameError, match="Did you mean 'ActivationSymmetric'"):
        resolve(qc)
    with pytest.raises(UnknownNameError, match="calibrate_method"):
        qc.calibrate_methd = "MinMax"
    with pytest.raises(UnknownNameError, match="quantization type"):
        resolve(QuantizationConfig(activation_type="QInt9"))
    bfp = get_default_config("BFP16")
    bfp.extra_options["BFPAttributes"]["blocksize"] = 8
    with pytest.raises(UnknownNameError, match="block_size"):
        resolve(bfp)


def test_inconsistent_configs_are_errors() -> None:
    with pytest.raises(ConfigError, match="QDQ"):
        resolve(QuantizationConfig(quant_format="QOperator"))
    with pytest.raises(ConfigError, match="power-of-two integer scales"):
        resolve(QuantizationConfig(calibrate_method="MinMSE", activation_type="QBFloat16"))
    with pytest.raises(ConfigError, match="CalibMovingAverage"):
        resolve(QuantizationConfig(calibrate_method="NonOverflow", extra_options={"CalibMovingAverage": True}))
    with pytest.raises(ConfigError, match="not available in this version"):
        resolve(QuantizationConfig(include_sq=True))


@pytest.mark.parametrize("name", ISSUE_PRESETS)
def test_round_trips(name: str) -> None:
    config = Config(global_quant_config=get_default_config(name))
    config.global_quant_config.nodes_to_exclude.append("node_a")
    assert Config.from_json(config.to_json()) == config
    assert Config.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    namespace: dict = {}
    exec(config.to_python(), namespace)  # the rendered code rebuilds the same config
    assert namespace["config"] == config


def test_custom_config_renders_without_preset() -> None:
    qc = QuantizationConfig(calibrate_method="Entropy", activation_type="QInt16", weight_type="QInt8", per_channel=True)
    namespace: dict = {}
    exec(Config(qc).to_python(), namespace)
    assert namespace["config"].global_quant_config == qc
    with pytest.raises(UnknownNameError):
        QuantizationConfig.from_dict({"calibration_method": "MinMax"})


def test_quark_new_api_qconfig() -> None:
    from ryzen_nb.quark import ModelQuantizer, QConfig, QLayerConfig
    from ryzen_nb.quark.qconfig import (
        A8W8_QCONFIG,
        XINT8_QCONFIG,
        AdaRoundConfig,
        CalibMethod,
        Int8Spec,
        MX6Spec,
        QuantGranularity,
        UInt8Spec,
        XInt8Spec,
    )

    x = resolve(XINT8_QCONFIG.to_legacy())
    assert x.activation.format == "int8" and x.activation.power_of_two and x.npu_legality  # int8, as Quark's XINT8_QCONFIG
    a = resolve(A8W8_QCONFIG.to_legacy())
    assert a.activation.method == "Percentile" and not a.align_slice and a.fold_activations
    spec = Int8Spec()
    spec.set_calibration_method(CalibMethod.MinMax)
    w = Int8Spec(quant_granularity=QuantGranularity.Channel)
    qc = QConfig(QLayerConfig(input_tensors=spec, weight=w), exclude=["fc", (["a"], ["b"])], AlignConcat=False)
    legacy = qc.to_legacy()
    assert (legacy.calibrate_method, legacy.per_channel, legacy.nodes_to_exclude) == ("MinMax", True, ["fc"])
    assert legacy.subgraphs_to_exclude == [(["a"], ["b"])] and legacy.extra_options["AlignConcat"] is False
    assert resolve(QConfig(QLayerConfig(activation=MX6Spec(), weight=MX6Spec())).to_legacy()).activation.format == "MX6"
    assert resolve(QConfig(QLayerConfig(input_tensors=UInt8Spec(), weight=XInt8Spec())).to_legacy()).activation.format == "uint8"
    tuned = ModelQuantizer(QConfig(QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()),
                                   algo_config=[AdaRoundConfig(num_iterations=10)]))
    assert tuned.settings.finetune.algorithm == "adaround" and tuned.settings.finetune.num_iterations == 10
    assert QConfig.get_default_config("XINT8") == Config(get_default_config("XINT8"))
