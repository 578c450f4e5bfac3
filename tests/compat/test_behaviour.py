"""What the adapter does beyond resolving names: Quark's presets and QConfig mean what they mean in
Quark; where Quark's behaviour is a bug (a bad reader logged and None returned, unknown names
dropped), ryzen-nb's errors stay; Quark features ryzen-nb lacks fail with a sentence saying so."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from ryzen_nb.errors import CalibrationDataError, ConfigError, UnknownNameError
from ryzen_nb.quantization.config import resolve
from ryzen_nb.quark import (
    MX6,
    AdaRoundConfig,
    AutoMixprecisionConfig,
    BFloat16,
    Config,
    GPTQConfig,
    Int8,
    Int8Spec,
    ModelQuantizer,
    MX6Spec,
    MX9Spec,
    QConfig,
    QLayerConfig,
    QuantizationConfig,
    XInt8Spec,
    get_library_path,
    quantize_dynamic,
)
from ryzen_nb.quark.quantization.config.custom_config import (
    DEFAULT_ADAROUND_PARAMS,
    XINT8_ADAROUND_QCONFIG,
    DefaultConfigMapping,
    get_default_config,
)


class _OneSample:
    """An onnxruntime-style reader of one feed."""

    def __init__(self, feed: dict[str, np.ndarray]) -> None:
        self.feed: dict[str, np.ndarray] | None = feed

    def get_next(self) -> dict[str, np.ndarray] | None:
        feed, self.feed = self.feed, None
        return feed


def test_presets_carry_quarks_values() -> None:
    xint8 = resolve(get_default_config("XINT8"))
    assert xint8.activation.format == "uint8" and xint8.activation.power_of_two and xint8.npu_legality
    tuned = resolve(get_default_config("A8W8_ADAROUND"))
    assert tuned.finetune.algorithm == "adaround" and tuned.finetune.batch_size == 2 and tuned.finetune.early_stop
    assert resolve(get_default_config("BF16_ADAQUANT")).finetune.algorithm == "adaquant"
    assert DEFAULT_ADAROUND_PARAMS["NumIterations"] == 1000 and DEFAULT_ADAROUND_PARAMS["LearningRate"] == 0.1
    assert resolve(get_default_config("S16S16_MIXED_S8S8")).mixed_precision.act_format == "int8"
    assert get_default_config("s8s8").extra_options["Percentile"] == 99.9999  # ryzen-nb's own names work too
    copy = get_default_config("XINT8")
    copy.extra_options["X"] = 1
    assert "X" not in DefaultConfigMapping["XINT8"].extra_options  # a fresh copy each time, as in Quark
    with pytest.raises(UnknownNameError, match="Did you mean 'XINT8_ADAROUND'"):
        get_default_config("XINT8_ADAROND")


@pytest.mark.parametrize(("preset", "missing"), [("UINT8_DYNAMIC_QUANT", "dynamic quantization"),
                                                 ("MATMUL_NBITS", "UseMatMulNBits")])
def test_presets_ryzen_nb_lacks_fail_naming_what_is_missing(preset: str, missing: str) -> None:
    with pytest.raises(ConfigError, match=missing):
        ModelQuantizer(Config(global_quant_config=get_default_config(preset)))


def test_qconfig_translation() -> None:
    settings = ModelQuantizer(XINT8_ADAROUND_QCONFIG).settings
    assert settings.activation.format == "int8" and settings.npu_legality  # Quark's XINT8_QCONFIG: int8 activations
    assert settings.finetune.num_iterations == 1000 and not settings.finetune.update_bias
    block = QConfig(QLayerConfig(activation=MX6Spec(), weight=MX6Spec())).to_legacy()
    assert resolve(block).activation.format == "MX6" and block.extra_options["BFPAttributes"]["bit_width"] == 13
    mixed = QConfig(QLayerConfig(input_tensors=Int8Spec(data_type=BFloat16), weight=Int8Spec(data_type=Int8())))
    assert (mixed.to_legacy().activation_type, mixed.to_legacy().weight_type) == ("QBFloat16", "QInt8")
    with pytest.raises(ConfigError, match="two different BFPAttributes layouts"):
        QConfig(QLayerConfig(activation=MX6Spec(), weight=MX9Spec())).to_legacy()
    as_dict = QConfig(QLayerConfig(activation=XInt8Spec(), weight=XInt8Spec()), algo_config=[AdaRoundConfig(
        num_iterations=7)], AlignConcat=False).to_dict()
    again = QConfig.from_dict(as_dict).to_legacy()
    assert again.extra_options["FastFinetune"]["NumIterations"] == 7 and again.extra_options["AlignConcat"] is False
    amp = AutoMixprecisionConfig(act_target_quant_type=MX6, weight_target_quant_type=MX6)
    legacy = QConfig(QLayerConfig(activation=Int8Spec(), weight=Int8Spec()), algo_config=[amp]).to_legacy()
    assert legacy.extra_options["AutoMixprecision"]["ActTargetQuantType"] == "QBFP"
    assert legacy.extra_options["BFPAttributes"]["bit_width"] == 13  # the data type's block layout


def test_algorithm_configs_check_their_arguments() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'num_iterations'"):
        AdaRoundConfig(num_iteration=5)
    with pytest.raises(ConfigError, match="GPTQ"):
        QConfig(QLayerConfig(activation=Int8Spec(), weight=Int8Spec()), algo_config=[GPTQConfig()]).to_legacy()
    for bad, match in (({"metric_default": "kl"}, "metric_default='l2'"), ({"subgraph_json": "s.json"}, "lacks"),
                       ({"target_layer_config": [QLayerConfig()]}, "one QLayerConfig")):
        with pytest.raises(ConfigError, match=match):
            QConfig(QLayerConfig(activation=Int8Spec(), weight=Int8Spec()),
                    algo_config=[AutoMixprecisionConfig(**bad)]).to_legacy()


def test_a_bad_reader_is_an_error_not_a_logged_none(workspace: Path, tmp_path: Path) -> None:
    """Quark logs the mismatch and returns None, writing nothing; the script then fails later."""
    quantizer = ModelQuantizer(Config(global_quant_config=get_default_config("XINT8")))
    model = workspace / "models/digits.onnx"
    with pytest.raises(CalibrationDataError, match="input"):
        quantizer.quantize_model(model, tmp_path / "q.onnx", _OneSample({"images": np.zeros((1, 1, 8, 8), np.float32)}))
    with pytest.raises(CalibrationDataError):
        quantizer.quantize_model(model, tmp_path / "q.onnx", _OneSample({"image": np.zeros((1, 8, 8, 3), np.float32)}))
    assert not (tmp_path / "q.onnx").exists()


def test_unknown_tensor_names_are_errors_not_dropped(workspace: Path) -> None:
    """Quark silently skips a MixedPrecisionTensor name that is not in the model."""
    qc = QuantizationConfig(activation_type="QInt8", weight_type="QInt8",
                            extra_options={"MixedPrecisionTensor": {"QInt16": ["/layer1/Add_output_0"]}})
    reader = _OneSample({"image": np.zeros((1, 1, 8, 8), np.float32)})
    with pytest.raises((ConfigError, UnknownNameError), match="/layer1/Add_output_0"):
        ModelQuantizer(Config(global_quant_config=qc)).quantize_model(workspace / "models/digits.onnx", None, reader)


def test_quantize_dynamic_names_quantize_static(workspace: Path) -> None:
    with pytest.raises(ConfigError, match="quantize_static"):
        quantize_dynamic(workspace / "models/digits.onnx", None)


def test_custom_op_library_registration(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With onnxruntime-extensions installed the registration line keeps working; without it, it
    fails with one sentence telling the user to delete it."""
    model = str(workspace / "models/digits.onnx")
    if importlib.util.find_spec("onnxruntime_extensions") is not None:
        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        assert session.run(None, {"image": np.zeros((1, 1, 8, 8), np.float32)})[0].shape == (1, 10)
    monkeypatch.setitem(sys.modules, "onnxruntime_extensions", None)  # as if not installed
    with pytest.raises(ConfigError) as error:
        get_library_path("cpu")
    assert "delete the register_custom_ops_library(get_library_path()) line" in str(error.value)
    assert str(error.value).count(". ") == 0  # one sentence
    with pytest.raises(ConfigError, match="CPU, CUDA, ROCM"):
        get_library_path(device="NPU")


def test_outputs_load_in_plain_onnxruntime(workspace: Path, tmp_path: Path) -> None:
    """Quark's BF16/BFP/MX outputs need its custom-op library; the same configs here give models
    stock onnxruntime runs."""
    for name in ("BF16", "BFP16", "MX6"):
        quantizer = ModelQuantizer(Config(global_quant_config=get_default_config(name)))
        model = quantizer.quantize_model(workspace / "models/digits.onnx", tmp_path / f"{name}.onnx")
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        assert session.run(None, {"image": np.zeros((1, 1, 8, 8), np.float32)})[0].shape == (1, 10)
        assert onnx.load(tmp_path / f"{name}.onnx").graph.node
