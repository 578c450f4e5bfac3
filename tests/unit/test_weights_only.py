"""WeightsOnly (Quark's extra option): weights quantized, every activation left float32.

What a user of it expects: the same weights as the preset gives them, no quantizer on any activation,
no calibration data needed, biases as Quark leaves them, and clear errors where the option cannot
apply. Also QuantizeBias=False, which the same plan step reads.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from ryzen_nb import Config, get_default_config, quantize
from ryzen_nb.errors import ConfigError
from ryzen_nb.quark.quantization.config.custom_config import XINT8_WEIGHTSONLY_ADAROUND_CONFIG
from ryzen_nb.testing import bert_encoder, random_images, resnet_cnn
from tests.helpers import session


@pytest.fixture(scope="module")
def small():
    return resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), random_images(12, size=16)


def _config(preset: str, **extra) -> Config:
    qc = get_default_config(preset)
    qc.extra_options.update(extra)
    return Config(global_quant_config=qc)


def _mac_inputs(model: onnx.ModelProto, k: int) -> dict[str, np.ndarray]:
    """Input ``k`` of every Conv and Gemm, by node name, as the model computes it (through its
    DequantizeLinear or quantizer function, if any)."""
    nodes = [n for n in model.graph.node if n.op_type in ("Conv", "Gemm") and len(n.input) > k]
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    wanted = [n.input[k] for n in nodes if n.input[k] not in inits]
    probe.graph.output.extend(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None) for name in wanted)
    feed = {i.name: np.zeros([d.dim_value or 1 for d in i.type.tensor_type.shape.dim], np.float32)
            for i in model.graph.input if i.name not in inits}
    names = [o.name for o in probe.graph.output]
    values = dict(zip(names, session(probe).run(names, feed), strict=True))
    return {n.name: np.asarray(inits.get(n.input[k], values.get(n.input[k]))) for n in nodes}


def _activation_quantizers(model: onnx.ModelProto) -> list[str]:
    """Quantizer nodes whose input is not a constant: the ones that round activations."""
    constants = {t.name for t in model.graph.initializer} | {o for n in model.graph.node
                                                             if n.op_type == "Constant" for o in n.output}
    return [n.name or n.op_type for n in model.graph.node
            if "Quantize" in n.op_type and n.input[0] not in constants]


@pytest.mark.parametrize("preset", ["A8W8", "A16W8", "BF16", "BFP16", "MX6"])
def test_weights_only_gives_the_presets_weights_and_leaves_activations_float(small, preset: str) -> None:
    model, data = small
    full = quantize(model, None, preset, data, progress=False).model
    assert _activation_quantizers(full)  # the check below can fail: the preset does quantize activations
    summary = quantize(model, None, _config(preset, WeightsOnly=True), None, progress=False)  # no data needed
    only = summary.model
    assert _activation_quantizers(only) == []
    assert summary.calibration_samples == 0
    weights, expected = _mac_inputs(only, 1), _mac_inputs(full, 1)
    assert weights.keys() == expected.keys() and weights
    float_weights = _mac_inputs(model, 1)
    changed = 0
    for name, w in weights.items():
        np.testing.assert_array_equal(w, expected[name], err_msg=f"{preset}: weight of {name}")
        changed += not np.array_equal(w, float_weights[name])
    assert changed, f"{preset}: no weight differs from the float model's; nothing was quantized"


@pytest.mark.parametrize(("preset", "float_biases"), [("A8W8", True), ("A16W8", True), ("BF16", False),
                                                     ("BFP16", False), ("XINT8", False)])
def test_weights_only_leaves_biases_float_where_quark_does(small, preset: str, float_biases: bool) -> None:
    """As Quark: with WeightsOnly its int32 bias pass does not run (an int32 bias takes the input's
    scale, which is not computed), so A8W8 and A16W8 biases stay float; biases that Quark quantizes
    as weights (float and block types, where it turns Int32Bias off, and XINT8, whose NPU CNN flow has
    it off) are quantized as without WeightsOnly."""
    model, data = small
    for weights_only, expect_float in ((False, False), (True, float_biases)):
        q = quantize(model, None, _config(preset, WeightsOnly=weights_only), data, progress=False).model
        inits = {t.name: t for t in q.graph.initializer}
        macs = [n for n in q.graph.node if n.op_type in ("Conv", "Gemm")]
        assert macs and all(len(n.input) > 2 for n in macs)
        # a quantized bias is read through a node (DequantizeLinear, a quantizer function) or stored
        # on the format's grid under a name of its own; a float one is the prepared model's initializer
        read_as_is = [n.input[2] in inits and inits[n.input[2]].data_type == onnx.TensorProto.FLOAT
                      and not n.input[2].endswith(f"_{preset}") for n in macs]
        assert all(read_as_is) if expect_float else not any(read_as_is), (preset, weights_only, read_as_is)


def test_weights_only_xint8_biases_are_int8(small) -> None:
    model, data = small
    xint8 = quantize(model, None, _config("XINT8", WeightsOnly=True), None, progress=False).model
    producers = {o: n for n in xint8.graph.node for o in n.output}
    biases = [producers.get(n.input[2]) for n in xint8.graph.node if n.op_type == "Conv"]
    assert biases and all(b is not None and b.op_type == "DequantizeLinear" for b in biases)
    assert _activation_quantizers(xint8) == []


def test_quantize_bias_false_leaves_every_bias_float(small) -> None:
    model, data = small
    q = quantize(model, None, _config("A8W8", QuantizeBias=False), data, progress=False).model
    inits = {t.name: t for t in q.graph.initializer}
    macs = [n for n in q.graph.node if n.op_type in ("Conv", "Gemm")]
    assert macs and all(inits[n.input[2]].data_type == onnx.TensorProto.FLOAT for n in macs)
    assert _activation_quantizers(q)  # the rest is quantized as before


def test_weights_only_with_adaround_fits_the_rounding_to_float_activations(small) -> None:
    """Quark's XINT8_WEIGHTSONLY_ADAROUND_CONFIG: AdaRound picks each weight's rounding direction
    against the float activations; the output on the calibration data is closer to FP32 than
    round-to-nearest weights give."""
    model, data = small
    nearest = quantize(model, None, _config("XINT8", WeightsOnly=True), None, progress=False).model
    fitted = quantize(model, None, Config(global_quant_config=XINT8_WEIGHTSONLY_ADAROUND_CONFIG), data,
                      progress=False).model
    assert _activation_quantizers(fitted) == []
    def outputs(m: onnx.ModelProto) -> np.ndarray:
        s = session(m)
        return np.concatenate([s.run(None, {"input": x[None]})[0] for x in data])

    reference = outputs(model)
    error = {name: float(np.mean((outputs(m) - reference) ** 2)) for name, m in (("nearest", nearest),
                                                                                 ("adaround", fitted))}
    assert error["adaround"] < error["nearest"], error


@pytest.mark.parametrize(("preset", "force", "quantized"), [("BFP16", None, False), ("BFP16", True, True),
                                                         ("BF16", None, True)])
def test_weights_only_layernorm_constants_follow_force_quantize_no_input_check(preset, force, quantized) -> None:
    """Quark quantizes a LayerNormalization's scale and bias only when its input is quantized or with
    ForceQuantizeNoInputCheck (which its BF16 preset sets and its BFP16 preset does not): with
    WeightsOnly no input is."""
    model = bert_encoder(0, layers=1)
    extra = {"WeightsOnly": True} | ({"ForceQuantizeNoInputCheck": force} if force is not None else {})
    summary = quantize(model, None, _config(preset, **extra), None, progress=False)
    norms = [n for n in model.graph.node if n.op_type == "LayerNormalization"]
    constants = [name for n in norms for name in n.input[1:] if name]
    assert norms and constants
    assert all((name in summary.formats_by_tensor) == quantized for name in constants), summary.formats_by_tensor
    inits = {t.name for t in model.graph.initializer}  # names as the source model has them
    weights = [n.input[1] for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in inits]
    assert weights and all(w in summary.formats_by_tensor for w in weights)  # the projections', either way


def test_weights_only_refuses_what_it_cannot_apply(small) -> None:
    model, data = small
    with pytest.raises(ConfigError, match="WeightsOnly leaves every activation float"):
        quantize(model, None, _config("A16W8", WeightsOnly=True, MixedPrecisionTensor={"QInt8": ["input"]}), None,
                 progress=False)
    qc = get_default_config("S16S8_ASWS")
    qc.include_auto_mp = True
    qc.extra_options.update(WeightsOnly=True, AutoMixprecision={"TargetQuantType": "QInt8"})
    with pytest.raises(ConfigError, match="automatic mixed precision"):
        quantize(model, None, Config(global_quant_config=qc), data, progress=False)
