"""A rule found by comparing ryzen-nb with AMD Quark 0.13 tensor by tensor on the real-world corpus
(ddddocr_det XINT8), checked here on a small synthetic graph:

* int8 weights of a symmetric scheme are stored in [-127, 127], as Quark stores them: a MinMSE
  power-of-two scale that clips a large negative weight gives it -127, never -128.

And one found the same way on EfficientNet-Lite0 XINT8 (the benchmark's model):

* Flatten's output gets a scale of its own, as in Quark's models (its registries have no rule for
  Flatten): after a GlobalAveragePool, which keeps its input's scale in XINT8, the pooled values
  are much smaller than the feature map's, and calibration gives the Gemm's input a finer scale.

And three found on MiniLM A16W8 (the benchmark's model; cosine 0.97606 against Quark's 0.97670):

* AlignEltwiseQuantType (on in Quark's A16W8): the constant operand of an Add, Sub, Mul or Div
  (MiniLM's position embeddings, its attention mask's scale) takes the activations' type, int16,
  not the weights' int8; Quark ignores it in its NPU CNN and transformer flows.
* A MatMul + bias Add becomes a Gemm reading its weight transposed (transB=1), as onnxslim writes
  it: with transB=0 onnxruntime runs a DequantizeLinear'd int8 weight and the Gemm as MatMulNBits,
  which rounds int16 activations to int8 inside (0.9758 in a plain session against 0.9768 as
  written).
* A constant Mul after such a Gemm and its Reshape (the query's 1/sqrt(head size)) folds into the
  Gemm's weight and bias (onnxslim's FusionGemmMul): one quantizer on the scaled query, not two.
"""

from __future__ import annotations

import logging

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

import ryzen_nb
from ryzen_nb.calibration.methods import constant_code_range, pow2_scale_for_values
from ryzen_nb.formats.integer import IntegerFormat
from ryzen_nb.graph.builder import make_model


def _conv_with_negative_outlier() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = rng.uniform(-0.99, 0.99, (16, 16, 3, 3)).astype(np.float32)
    w[3, 5, 1, 1] = -1.05  # MinMSE keeps the 2^-7 scale of the bulk and clips this one (-134.4 codes)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv", pads=[1, 1, 1, 1])],
        "outlier", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16, 8, 8])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(np.zeros(16, np.float32), "b")])
    return make_model(graph, opset=17)


def test_xint8_weight_codes_stay_in_the_symmetric_range() -> None:
    model = _conv_with_negative_outlier()
    int8 = IntegerFormat(8, True)
    w = numpy_helper.to_array(model.graph.initializer[0])
    scale, _ = pow2_scale_for_values(w, int8, "MinMSE")
    assert scale == np.float32(2.0**-7)  # the outlier is clipped: the case where -128 could appear
    data = np.random.default_rng(1).standard_normal((8, 16, 8, 8)).astype(np.float32)
    summary = ryzen_nb.quantize(model, None, "XINT8", data, progress=False)
    inits = {t.name: numpy_helper.to_array(t) for t in summary.model.graph.initializer}
    dq = next(n for n in summary.model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] in inits
              and inits[n.input[0]].ndim == 4)
    codes = inits[dq.input[0]].astype(np.int64)
    assert codes.min() == -127 and codes[3, 5, 1, 1] == -127  # Quark stores -127 here too
    assert codes.max() <= 127


def test_constant_code_range() -> None:
    assert constant_code_range(IntegerFormat(8, True)) == (-127, 127)
    assert constant_code_range(IntegerFormat(8, True), symmetric=False) == (-128, 127)
    assert constant_code_range(IntegerFormat(8, False)) == (0, 255)


def test_flatten_output_gets_a_scale_of_its_own_after_global_average_pool() -> None:
    from ryzen_nb.testing import random_images, resnet_cnn

    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)  # ... Relu -> GlobalAveragePool -> Flatten -> Gemm
    q = ryzen_nb.quantize(model, None, "XINT8", random_images(8, size=16), progress=False).model
    inits = {t.name: numpy_helper.to_array(t) for t in q.graph.initializer}
    producers = {o: n for n in q.graph.node for o in n.output}
    scale_in = {n.op_type: float(inits[producers[n.input[0]].input[1]]) for n in q.graph.node
                if n.op_type in ("GlobalAveragePool", "Flatten")}
    scale_out = {producers[n.input[0]].op_type: float(inits[n.input[1]]) for n in q.graph.node
                 if n.op_type == "QuantizeLinear" and n.input[0] in producers
                 and producers[n.input[0]].op_type in ("GlobalAveragePool", "Flatten")}
    assert scale_out["GlobalAveragePool"] == scale_in["GlobalAveragePool"]  # the NPU's pool keeps its input's scale
    assert scale_in["Flatten"] == scale_out["GlobalAveragePool"]
    assert scale_out["Flatten"] < scale_in["Flatten"]  # calibrated on the pooled values: finer


def _scaled_add_model() -> onnx.ModelProto:
    """Conv, an Add of a constant (position-embedding-like), a Mul by a constant, Conv."""
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
             for name, shape in (("w1", (8, 3, 3, 3)), ("w2", (8, 8, 1, 1)))]
    inits += [numpy_helper.from_array((rng.standard_normal((1, 8, 8, 8)) * 0.05).astype(np.float32), "pos"),
              numpy_helper.from_array(np.float32(0.37), "scale")]
    n = helper.make_node
    graph = helper.make_graph(
        [n("Conv", ["x", "w1"], ["c"], name="conv1", pads=[1, 1, 1, 1]), n("Add", ["c", "pos"], ["a"], name="add"),
         n("Mul", ["a", "scale"], ["m"], name="mul"), n("Conv", ["m", "w2"], ["y"], name="conv2")],
        "scaled_add", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    return make_model(graph, opset=17)


def _stored(model: onnx.ModelProto, name: str) -> tuple[np.ndarray, float]:
    """(codes, scale) of the quantized constant ``name``."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    dq = next(n for n in model.graph.node if n.op_type == "DequantizeLinear" and n.input[0] == f"{name}_quantized")
    return inits[dq.input[0]], float(inits[dq.input[1]])


@pytest.mark.parametrize("preset, dtype", [("A16W8", np.int16), ("A8W8", np.int8), ("XINT8", np.int8)])
def test_eltwise_constants_take_the_activation_type_in_a16w8(preset: str, dtype: type) -> None:
    """Quark 0.13 on this graph: A16W8 stores pos and scale as int16 with scales 5.9502268e-06 and
    1.1291849e-05 (max |value| / 32767); A8W8 and XINT8 as int8."""
    cal = [{"x": np.random.default_rng(i).standard_normal((1, 3, 8, 8)).astype(np.float32)} for i in range(8)]
    q = ryzen_nb.quantize(_scaled_add_model(), None, preset, cal, progress=False).model
    for name, value in (("pos", None), ("scale", 0.37)):
        codes, scale = _stored(q, name)
        assert codes.dtype == dtype, (name, codes.dtype)
        if preset == "A16W8":
            largest = value if value is not None else float(np.abs(numpy_helper.to_array(
                next(t for t in _scaled_add_model().graph.initializer if t.name == name))).max())
            assert scale == pytest.approx(largest / 32767, rel=1e-6)
    assert {n.input[0] for n in q.graph.node if n.op_type == "DequantizeLinear" and n.input[0].startswith("w")} \
        and all(_stored(q, w)[0].dtype == np.int8 for w in ("w1", "w2"))  # the weights stay int8


def test_align_eltwise_types_has_no_effect_in_the_npu_cnn_flow(caplog) -> None:
    config = ryzen_nb.Config(ryzen_nb.get_default_config("XINT8"))
    config.global_quant_config.extra_options["AlignEltwiseQuantType"] = True
    cal = [{"x": np.random.default_rng(i).standard_normal((1, 3, 8, 8)).astype(np.float32)} for i in range(4)]
    with caplog.at_level(logging.WARNING):
        q = ryzen_nb.quantize(_scaled_add_model(), None, config, cal, progress=False).model
    assert _stored(q, "pos")[0].dtype == np.int8
    assert any("AlignEltwiseQuantType has no effect" in r.getMessage() for r in caplog.records)


def _projection_model() -> onnx.ModelProto:
    """[1, 16, 32] tokens -> MatMul + bias Add -> Mul by 1/8 (the query's scaling) -> output."""
    rng = np.random.default_rng(1)
    n = helper.make_node
    graph = helper.make_graph(
        [n("MatMul", ["x", "w"], ["mm"], name="query"), n("Add", ["mm", "b"], ["q"], name="query_bias"),
         n("Mul", ["q", "eighth"], ["y"], name="query_scale")],
        "projection", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 16, 32])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16, 24])],
        [numpy_helper.from_array((rng.standard_normal((32, 24)) * 0.2).astype(np.float32), "w"),
         numpy_helper.from_array((rng.standard_normal(24) * 0.1).astype(np.float32), "b"),
         numpy_helper.from_array(np.float32(0.125), "eighth")])
    return make_model(graph, opset=17)


def test_projection_becomes_a_transposed_gemm_with_its_scale_folded_in() -> None:
    from ryzen_nb.graph.prepare import prepare, run_with_outputs

    model = _projection_model()
    x = np.random.default_rng(2).standard_normal((1, 16, 32)).astype(np.float32)
    prepared = prepare(model)
    ops = [n.op_type for n in prepared.model.graph.node]
    assert "Mul" not in ops and ops.count("Gemm") == 1
    gemm = next(n for n in prepared.model.graph.node if n.op_type == "Gemm")
    assert any(a.name == "transB" and a.i == 1 for a in gemm.attribute) and gemm.input[1] == "w"
    weights = {t.name: numpy_helper.to_array(t) for t in prepared.model.graph.initializer}
    w = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == "w"))
    np.testing.assert_array_equal(weights["w"], (w * 0.125).T)  # a power of two: exact
    assert "query_scale" in prepared.folded_nodes
    assert "eighth" not in weights  # the Mul's constant goes with it (onnxruntime warned of it at every load)
    np.testing.assert_allclose(run_with_outputs(prepared.model, ["y"], {"x": x})["y"],
                               run_with_outputs(model, ["y"], {"x": x})["y"], rtol=1e-5, atol=1e-6)


def test_a16w8_projection_runs_in_a_plain_session_as_written() -> None:
    """A plain onnxruntime session computes the quantized model's own numbers: no MatMulNBits that
    rounds the int16 activations to int8."""
    model = _projection_model()
    cal = [{"x": np.random.default_rng(i).standard_normal((1, 16, 32)).astype(np.float32)} for i in range(8)]
    q = ryzen_nb.quantize(model, None, "A16W8", cal, progress=False).model.SerializeToString()
    written = ort.SessionOptions()
    written.add_session_config_entry("session.disable_quant_qdq", "1")
    sessions = [ort.InferenceSession(q, so, providers=["CPUExecutionProvider"]) for so in (ort.SessionOptions(), written)]
    plain, as_written = (s.run(None, cal[0])[0] for s in sessions)
    np.testing.assert_array_equal(plain, as_written)


def test_a_weight_two_projections_share_is_transposed_once_and_not_kept() -> None:
    """Two MatMul + bias Add pairs reading one weight (layers sharing parameters) read one
    transposed copy; the original, read by nothing after, does not stay in the model."""
    rng = np.random.default_rng(3)
    n = helper.make_node
    graph = helper.make_graph(
        [n("MatMul", ["x", "w"], ["m1"], name="mm1"), n("Add", ["m1", "b"], ["a1"], name="add1"),
         n("Relu", ["a1"], ["r"], name="relu"), n("MatMul", ["r", "w"], ["m2"], name="mm2"),
         n("Add", ["m2", "b"], ["y"], name="add2")],
        "shared", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8, 16])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8, 16])],
        [numpy_helper.from_array(rng.standard_normal((16, 16)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b")])
    model = make_model(graph, opset=17)
    cal = [{"x": rng.standard_normal((1, 8, 16)).astype(np.float32)} for _ in range(4)]
    q = ryzen_nb.quantize(model, None, "A8W8", cal, progress=False).model
    gemms = [g for g in q.graph.node if g.op_type == "Gemm"]
    assert len(gemms) == 2 and gemms[0].input[1] == gemms[1].input[1]
    assert "w" not in {t.name for t in q.graph.initializer}  # the float original
