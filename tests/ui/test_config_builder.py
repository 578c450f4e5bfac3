"""The config builder, driven through its controls without a browser."""

from __future__ import annotations

import pytest

import ryzen_nb
from ryzen_nb import Config, get_default_config
from ryzen_nb.errors import UnknownNameError
from ryzen_nb.quantization.config import PRESETS
from ryzen_nb.testing import random_images, resnet_cnn
from ryzen_nb.ui.config_builder import ConfigBuilder


@pytest.fixture(scope="module")
def model():
    return resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)


def test_presets_give_their_configs(model) -> None:
    builder = ConfigBuilder(model, preset="XINT8")
    assert builder.config == Config(get_default_config("XINT8"))
    assert builder.problems == [] and "valid config" in builder.status.value
    assert "get_default_config('XINT8')" in builder.code
    # the menu shows names (a description would be cut off in it); the preset's description shows beside it
    assert builder.preset.options == tuple(PRESETS) and "power-of-two scales" in builder.preset_help.value
    assert builder.errors.layout.display == "none"  # an empty error box is not drawn at all
    builder.preset.value = "A16W8"
    assert (builder.activation_type.value, builder.weight_type.value) == ("QInt16", "QInt8")
    assert "int16 activations" in builder.preset_help.value
    assert builder.config == Config(get_default_config("A16W8"))
    builder.reset("bfp16")  # names are case-insensitive
    assert builder.preset.value == "BFP16"
    assert builder.config.global_quant_config.extra_options["BFPAttributes"] == \
        get_default_config("BFP16").extra_options["BFPAttributes"]  # kept though no control shows it
    with pytest.raises(UnknownNameError, match="XINT8"):
        builder.reset("XINT9")


def test_controls_build_the_config_and_its_code(model) -> None:
    builder = ConfigBuilder(model, preset="A8W8")
    builder.per_channel.value = True
    builder.fast_ft.value = True
    builder.ft_algorithm.value = "adaquant"
    assert builder.ft_learning_rate.value == 1e-5  # AdaQuant's rate
    builder.ft_iterations.value = 20
    builder.bias_correction.value = True
    builder.exclude_op_types.value = ("Gemm",)
    builder.node_filter.value = "layer2"
    assert builder.exclude_nodes.options and all("layer2" in n for n in builder.exclude_nodes.options)
    builder.exclude_nodes.value = (builder.exclude_nodes.options[0],)
    builder.mp_filter.value = "relu"
    builder.mp_tensors.value = builder.mp_tensors.options[:2]
    builder.mp_format.value = "QInt16"
    builder.mp_add.click()
    qc = builder.config.global_quant_config
    assert qc.per_channel and qc.include_fast_ft and qc.op_types_to_exclude == ["Gemm"]
    assert qc.extra_options["FastFinetune"]["OptimAlgorithm"] == "adaquant"
    assert qc.extra_options["BiasCorrection"] is True
    assert qc.extra_options["MixedPrecisionTensor"] == {"QInt16": list(builder.mp_tensors.options[:2])}
    namespace: dict = {}
    exec(builder.code, namespace)  # the shown code builds the same config
    assert namespace["config"] == builder.config
    summary = ryzen_nb.quantize(model, None, builder.config, random_images(6, size=16), progress=False)
    assert summary.formats_by_tensor[builder.mp_tensors.options[0]] == "int16"
    assert "finetune" in summary.reports and "bias_correction" in summary.reports


def test_weights_only_box_writes_the_option_and_the_config_quantizes_without_data(model) -> None:
    builder = ConfigBuilder(model, preset="BF16")
    assert builder.weights_only.value is False and "WeightsOnly" not in builder.code
    builder.weights_only.value = True
    assert builder.config.global_quant_config.extra_options["WeightsOnly"] is True
    assert "extra_options['WeightsOnly'] = True" in builder.code and builder.problems == []
    summary = ryzen_nb.quantize(model, None, builder.config, None, progress=False)
    assert summary.calibration_samples == 0
    assert not [n for n in summary.model.graph.node if n.op_type == "bfloat16QuantizeDequantize"
                and n.input[0] not in {t.name for t in summary.model.graph.initializer}]
    builder.weights_only.value = False
    assert "WeightsOnly" not in builder.config.global_quant_config.extra_options


def test_live_validation_and_errors_shown_in_the_widget(model) -> None:
    builder = ConfigBuilder(model, preset="XINT8")
    builder.activation_type.value = "QBFloat16"  # XINT8's MinMSE power-of-two method cannot do bf16
    assert builder.problems and "Not valid yet" in builder.status.value
    with pytest.raises(Exception):  # noqa: B017 - the same error the quantizer would raise
        _ = builder.config
    builder.calibrate_method.value = "MinMax"
    assert builder.problems == []
    builder.mp_tensors.value = ()
    builder.mp_add.click()  # nothing selected: shown in the widget, not swallowed
    assert "Select one or more tensors" in builder.errors.value and builder.errors.last_error is not None
    assert builder.errors.layout.display == ""  # shown
    builder.mp_tensors.value = builder.mp_tensors.options[:1]
    builder.mp_add.click()
    assert builder.errors.value == ""  # a successful callback clears the message
    assert builder.errors.layout.display == "none"  # and hides the box: no empty bar under the widget


def test_loading_a_config_with_names_not_in_the_model(model) -> None:
    qc = get_default_config("A8W8")
    qc.nodes_to_exclude = ["no_such_node"]
    qc.extra_options["MixedPrecisionTensor"] = {"QInt16": ["no_such_tensor"]}
    builder = ConfigBuilder(model)
    builder.load(Config(qc))
    assert any("no_such_node" in p for p in builder.problems)
    assert any("no_such_tensor" in p for p in builder.problems)
    assert builder.config.global_quant_config.nodes_to_exclude == ["no_such_node"]  # kept, flagged
    without_model = ConfigBuilder()
    assert without_model.exclude_nodes.options == () and without_model.problems == []


def test_per_channel_is_offered_only_where_the_preset_takes_it(model) -> None:
    builder = ConfigBuilder(model, preset="XINT8")
    assert builder.per_channel.disabled  # the NPU CNN flow is per tensor; resolve() would refuse it
    builder.reset("A8W8")
    assert not builder.per_channel.disabled
