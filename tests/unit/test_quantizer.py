"""The quantizer's behaviour: outputs, semantics of XINT8/A8W8, selection, errors, tools."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import ryzen_nb
from ryzen_nb import Config, get_default_config, quantize
from ryzen_nb.errors import CalibrationDataError, ConfigError, ModelError, ModelNotFoundError
from ryzen_nb.quark import ModelQuantizer
from ryzen_nb.testing import random_images, resnet_cnn
from tests.helpers import run, session


@pytest.fixture(scope="module")
def small():
    return resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), random_images(12, size=16)


def _dq_scales(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in model.graph.node if n.op_type == "Constant"}
    out = {}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear":
            scale = inits.get(n.input[1], consts.get(n.input[1]))
            zp = inits.get(n.input[2], consts.get(n.input[2])) if len(n.input) > 2 else None
            out[n.output[0]] = (scale, zp, inits.get(n.input[0]))
    return out


def test_xint8_semantics(small) -> None:
    model, data = small
    q = quantize(model, None, "XINT8", data, progress=False).model
    for name, (scale, zp, codes) in _dq_scales(q).items():
        assert np.all(np.log2(scale) == np.round(np.log2(scale))), f"{name}: scale {scale} is not a power of two"
        if codes is None:  # activation: uint8 with zero point 128
            assert zp.dtype == np.uint8 and np.all(zp == 128)
        else:  # weights and biases: int8, zero point 0, per tensor
            assert codes.dtype == np.int8 and np.all(zp == 0) and np.ndim(scale) == 0
    ops = [n.op_type for n in q.graph.node]
    assert "Relu" in ops and "QuantizeLinear" in ops
    # Conv -> Relu folded: no QDQ between a Conv and its Relu (an Add keeps the quantizer before its Relu).
    # Every Relu reads a Conv, an Add or a DequantizeLinear whether folded or not: follow the quantizers back.
    producers = {o: n for n in q.graph.node for o in n.output}
    folded = 0
    for n in q.graph.node:
        if n.op_type == "Relu":
            source = producers.get(n.input[0])
            while source is not None and source.op_type in ("QuantizeLinear", "DequantizeLinear"):
                source = producers.get(source.input[0])
            if source is not None and source.op_type == "Conv":
                assert producers[n.input[0]].op_type == "Conv", f"a quantizer between {source.name} and {n.name}"
                folded += 1
    assert folded


def test_a8w8_int32_bias_and_per_channel(small) -> None:
    model, data = small
    qc = get_default_config("A8W8")
    qc.per_channel = True
    q = quantize(model, None, qc, data, progress=False).model
    scales = _dq_scales(q)
    biases = [v for k, v in scales.items() if v[2] is not None and v[2].dtype == np.int32]
    weights = [v for k, v in scales.items() if v[2] is not None and v[2].dtype == np.int8]
    assert biases and weights and any(np.ndim(w[0]) == 1 for w in weights)  # per-channel weight scales


def test_output_file_metadata_and_summary(small, tmp_path) -> None:
    model, data = small
    src = tmp_path / "float.onnx"
    onnx.save(model, str(src))
    before = src.read_bytes()
    out = tmp_path / "q" / "model_xint8.onnx"
    summary = quantize(src, out, "XINT8", data, progress=False)
    assert src.read_bytes() == before and out.exists()
    saved = onnx.load(str(out))
    meta = {p.key: p.value for p in saved.metadata_props}
    formats = json.loads(meta["ryzen_nb.formats"])
    assert set(formats.values()) == {"uint8", "int8"}
    assert json.loads(meta["ryzen_nb.config"])["global_quant_config"]["calibrate_method"] == "MinMSE"
    assert "XINT8" in repr(summary) and "samples" in repr(summary) and summary._repr_html_().startswith("<div>")
    assert summary.size_after < summary.size_before and summary.compression > 3.5
    with pytest.raises(ConfigError, match="input model"):
        quantize(src, src, "XINT8", data, progress=False)
    assert src.read_bytes() == before


def test_model_quantizer_call_shape(small, tmp_path) -> None:
    model, data = small

    class Reader:  # the shape of the readers in the Ryzen AI tutorials
        def __init__(self):
            self.it = iter([{"input": x[None]} for x in data])

        def get_next(self):
            return next(self.it, None)

    out = tmp_path / "out.onnx"
    result = ModelQuantizer(Config(global_quant_config=get_default_config("A8W8"))).quantize_model(model, str(out), Reader())
    assert isinstance(result, onnx.ModelProto) and out.exists()
    folder = tmp_path / "calib"
    folder.mkdir()
    for i, x in enumerate(data[:4]):
        np.save(folder / f"calib_{i:06d}.npy", x[None])
    quantizer = ModelQuantizer(get_default_config("XINT8"))
    quantizer.quantize_model(model, None, calibration_data_path=str(folder))
    assert quantizer.summary.calibration_samples == 4


def test_no_calibration_needed_for_float_and_block_formats(small) -> None:
    model, data = small
    for preset in ("BF16", "BFP16", "MXFP4E2M1"):
        s = quantize(model, None, preset, None, progress=False)
        assert s.calibration_samples == 0
    with pytest.raises(ConfigError, match="needs calibration data"):
        quantize(model, None, "XINT8", None, progress=False)
    qc = get_default_config("XINT8")
    qc.extra_options["UseRandomData"] = True
    assert quantize(model, None, qc, None, progress=False).calibration_samples == 1


@pytest.mark.parametrize("preset", ["BF16", "FP16", "MXFP8E4M3"])
def test_float_quantizers_deferred_past_value_selection_give_the_same_numbers(small, monkeypatch, preset) -> None:
    """bf16/fp16/fp8 rounding commutes with Relu, MaxPool and data movement: quantizing after them
    only must change nothing but the operator count. (MXFP8 is a block format: nothing deferred.)"""
    from ryzen_nb.quantization import plan as engine
    from ryzen_nb.testing import bert_encoder, random_tokens

    encoder = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8)
    for model, feeds in ((small[0], {"input": small[1][:1]}),
                         (encoder, {encoder.graph.input[0].name: random_tokens(1, seq_len=8)})):
        deferred = quantize(model, None, preset, None, progress=False)
        with monkeypatch.context() as m:
            m.setattr(engine, "_defer_past_value_selection", lambda *args: [])
            everywhere = quantize(model, None, preset, None, progress=False)
        assert np.array_equal(run(deferred.model, **feeds), run(everywhere.model, **feeds))
        nodes = lambda q: len(q.model.graph.node)  # noqa: E731
        if preset == "MXFP8E4M3":
            assert nodes(deferred) == nodes(everywhere)
            continue
        assert nodes(deferred) < nodes(everywhere)
        assert any("fewer operators" in note for note in deferred.notes)
        # no quantizer between a Conv and the Relu that follows it (onnxruntime fuses the pair)
        producers = {o: n for n in deferred.model.graph.node for o in n.output}
        for node in deferred.model.graph.node:
            if node.op_type == "Relu":
                assert producers[node.input[0]].op_type in ("Conv", "Add")


def test_exclusions(small) -> None:
    model, data = small
    qc = get_default_config("A8W8")
    qc.nodes_to_exclude = ["fc", "^layer2.*"]  # a name and a regular expression
    q = quantize(model, None, qc, data, progress=False).model
    fc = next(n for n in q.graph.node if n.name == "fc")
    assert all("DequantizeLinear" not in i for i in fc.input)  # fc reads float tensors
    layer2 = [n for n in q.graph.node if n.name.startswith("layer2") and n.op_type == "Conv"]
    assert layer2 and all(not i.endswith("_DequantizeLinear_Output") for n in layer2 for i in n.input[1:])
    qc.nodes_to_exclude = ["layer9.conv"]
    with pytest.raises(ConfigError, match="closest"):
        quantize(model, None, qc, data, progress=False)
    qc = get_default_config("A8W8")
    qc.op_types_to_exclude = ["Gemm"]
    q = quantize(model, None, qc, data, progress=False).model
    assert all("DequantizeLinear" not in i for i in next(n for n in q.graph.node if n.name == "fc").input)


def test_mixed_precision_tensor(small) -> None:
    model, data = small
    qc = get_default_config("A8W8")
    act = next(n.output[0] for n in model.graph.node if n.op_type == "Add")
    qc.extra_options["MixedPrecisionTensor"] = {"QInt16": [act]}
    s = quantize(model, None, qc, data, progress=False)
    assert s.formats_by_tensor[act] == "int16"
    qc.extra_options["MixedPrecisionTensor"] = {"QInt16": [act + "_typo"]}
    with pytest.raises(ConfigError, match="closest"):
        quantize(model, None, qc, data, progress=False)


def test_bad_inputs(small, tmp_path) -> None:
    model, data = small
    with pytest.raises(ModelNotFoundError):
        quantize(tmp_path / "nope.onnx", None, "XINT8", data)
    with pytest.raises(CalibrationDataError, match="'input'.*shape \\[1, 3, 8, 8\\]"):
        quantize(model, None, "XINT8", np.zeros((4, 3, 8, 8), np.float32), progress=False)
    with pytest.raises(CalibrationDataError, match="NaN"):
        bad = data.copy()
        bad[3, 0, 0, 0] = np.nan
        quantize(model, None, "XINT8", bad, progress=False)
    with pytest.raises(CalibrationDataError, match="Rename 'image' to 'input'"):
        quantize(model, None, "XINT8", [{"image": data[:1]}], progress=False)
    with pytest.raises(ConfigError, match="preset name"):
        quantize(model, None, 42, data)
    with pytest.raises(ryzen_nb.UnknownNameError, match="Did you mean 'XINT8'"):
        quantize(model, None, "XIN8", data)


def test_dynamic_batch_fixed_from_data(small) -> None:
    model, data = small
    dyn = onnx.ModelProto()
    dyn.CopyFrom(model)
    dyn.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    s = quantize(dyn, None, "A8W8", data, progress=False)
    assert any("made inputs static" in p for p in s.preparation)
    with pytest.raises(ModelError, match="dynamic input dimensions"):
        quantize(dyn, None, "BF16", None, progress=False)
    s = quantize(dyn, None, "BF16", None, input_shapes={"input": [1, 3, 16, 16]}, progress=False)
    assert s.model is not None


def test_xint8_dpu_rewrites_and_legality() -> None:
    from ryzen_nb.spec.dpu import avgpool_factor

    assert avgpool_factor(9) == 7 / 64 and avgpool_factor(49) == 21 / 1024 and avgpool_factor(300) == 1 / 300
    # a model with LeakyRelu, Sigmoid and global average pooling over 7x7
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.3, "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["c"], ["l"], name="leaky", alpha=0.1),
             helper.make_node("Sigmoid", ["l"], ["s"], name="sig"),
             helper.make_node("GlobalAveragePool", ["s"], ["y"], name="gap")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 7, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])], initializer=[w])
    model = ryzen_nb.graph.make_model(graph, opset=17)
    data = rng.standard_normal((8, 3, 7, 7)).astype(np.float32)
    s = quantize(model, None, "XINT8", data, progress=False)
    notes = " ".join(s.notes)
    assert "LeakyRelu alpha" in notes and "Sigmoid -> HardSigmoid" in notes and "GlobalAveragePool 1/49" in notes
    leaky = next(n for n in s.model.graph.node if n.op_type == "LeakyRelu")
    assert abs(leaky.attribute[0].f - 26 / 256) < 1e-7
    x = data[:1]
    assert np.allclose(run(s.model, x=x), run(model, x=x), atol=0.08)


def test_convert_bf16_formats(tmp_path) -> None:
    from ryzen_nb.graph.convert import _retype
    from ryzen_nb.quantization.bf16 import convert_bf16

    model = resnet_cnn(0, blocks=(1,), width=8, image_size=16)
    x = random_images(1, size=16)
    ref = run(model, input=x)
    for fmt in ("with_cast", "simulate_bf16", "customqdq"):
        r = convert_bf16(model, tmp_path / f"{fmt}.onnx", fmt)
        assert r.runs_on_cpu and (tmp_path / f"{fmt}.onnx").exists()
        np.testing.assert_allclose(run(r.model, input=x), ref, rtol=0.05, atol=0.05)
    r = convert_bf16(model, tmp_path / "bf16.onnx", "bf16")
    assert not r.runs_on_cpu and "bfloat16" in r.cpu_message
    assert all(t.data_type == onnx.TensorProto.BFLOAT16 for t in r.model.graph.initializer if t.data_type != 7)
    # FP16 models keep FP16 inputs and outputs
    fp16 = _retype(model, onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, keep_io=False)
    r = convert_bf16(fp16, None, "with_cast")
    assert r.from_float16 and r.model.graph.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
    out = session(r.model).run(None, {"input": x.astype(np.float16)})[0]
    assert out.dtype == np.float16 and np.allclose(out, ref, rtol=0.1, atol=0.1)
    with pytest.raises(ryzen_nb.UnknownNameError, match="with_cast"):
        convert_bf16(model, None, "with_casts")


def test_evaluate_folders(tmp_path) -> None:
    from PIL import Image

    from ryzen_nb.evaluation import evaluate_folders

    a, b = tmp_path / "fp32", tmp_path / "q"
    a.mkdir(), b.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        x = rng.standard_normal((1, 10)).astype(np.float32)
        np.save(a / f"{i}.npy", x)
        np.save(b / f"{i}.npy", x + 0.01 * rng.standard_normal((1, 10)).astype(np.float32))
    img = rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)
    Image.fromarray(img).save(a / "img.png")
    Image.fromarray(img).save(b / "img.png")
    np.save(a / "extra.npy", np.zeros(3))
    c = evaluate_folders(a, b)
    s = c.summary()
    assert s["files"] == 4 and 0.99 < s["mean_cosine"] <= 1.0 and s["min_ssim"] > 0.9
    assert c.only_baseline == ["extra.npy"] and "Mean cos similarity" in c.report()
    np.save(b / "0.npy", np.zeros((2, 10)))
    with pytest.raises(ryzen_nb.RyzenNBError, match="shape"):
        evaluate_folders(a, b)
    with pytest.raises(ryzen_nb.RyzenNBError, match="does not exist"):
        evaluate_folders(tmp_path / "x", b)


def test_load_check_covers_function_bodies_and_the_graph(monkeypatch) -> None:
    """The final onnxruntime check loads the graph with calls stubbed and each body once."""
    from onnx import TensorProto, helper

    from ryzen_nb.graph.builder import make_model
    from ryzen_nb.quantization import run as quantizer

    monkeypatch.setattr(quantizer, "_CHECKED_FUNCTIONS", set())

    def model(body_op: str, graph_op: str) -> onnx.ModelProto:
        body = helper.make_function("ryzen_nb", "QDQ", ["x"], ["y"], [helper.make_node(body_op, ["x"], ["y"])],
                                    opset_imports=[helper.make_opsetid("", 21)])
        nodes = [helper.make_node("QDQ", ["a"], ["b"], domain="ryzen_nb"), helper.make_node(graph_op, ["b"], ["c"])]
        graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2])],
                                  [helper.make_tensor_value_info("c", TensorProto.FLOAT, [2])])
        return make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("ryzen_nb", 1)],
                          functions=[body])

    quantizer._load_check(model("Relu", "Neg"))
    with pytest.raises(Exception, match="NoSuchOp"):
        quantizer._load_check(model("NoSuchOp", "Neg"))
    with pytest.raises(Exception, match="NoSuchOp"):
        quantizer._load_check(model("Relu", "NoSuchOp"))


def _transposed_input_conv() -> tuple[onnx.ModelProto, np.ndarray]:
    """x [1, 8, 8, 3] (channels last) -> Transpose -> Conv, plus a row of a constant table picked by input idx."""
    from onnx import TensorProto, helper

    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Transpose", ["x"], ["nchw"], name="to_nchw", perm=[0, 3, 1, 2]),
             helper.make_node("Conv", ["nchw", "w"], ["y"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Gather", ["table", "idx"], ["row"], name="lookup", axis=0),
             helper.make_node("Add", ["y", "row"], ["out"], name="add")]
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((4, 8, 1, 1)).astype(np.float32), "table")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 3]),
                                           helper.make_tensor_value_info("idx", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, rng.random((8, 1, 8, 8, 3)).astype(np.float32)


def test_data_movement_of_an_unquantized_tensor_stays_float_without_force_quantize_no_input_check() -> None:
    """Quark moves a tensor through Transpose, Reshape, Squeeze, Unsqueeze, Resize, MaxPool, Gather and
    LayerNormalization quantized only when it is quantized already, unless ForceQuantizeNoInputCheck
    (set by the integer and BF16 presets, not by BFP16 and MX). ryzen-nb quantized the graph input
    and the Transpose's output both, two block roundings along different axes; on Silero VAD it
    re-quantized the LSTM state at every step (stream cosine 0.977, Quark's 0.997, now the same)."""
    model, data = _transposed_input_conv()
    feeds = [{"x": d, "idx": np.array(k % 4, np.int64)} for k, d in enumerate(data)]
    plain = quantize(model, None, "BFP16", feeds, progress=False)
    assert "x" not in plain.formats_by_tensor and "nchw" in plain.formats_by_tensor
    assert "table" in plain.formats_by_tensor  # a Gather from a constant table is quantized either way
    assert any("left float" in note and "to_nchw" in note for note in plain.notes)
    forced = get_default_config("BFP16")
    forced.extra_options["ForceQuantizeNoInputCheck"] = True
    assert "x" in quantize(model, None, forced, feeds, progress=False).formats_by_tensor
    assert "x" in quantize(model, None, "A8W8", feeds, progress=False).formats_by_tensor  # the preset sets it
