"""Model preparation: checks, opset upgrade, BN folding, constants, static shapes, never touching the input."""

from __future__ import annotations

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.errors import ModelError, ModelNotFoundError
from ryzen_nb.graph import OPSET, load_model, prepare, save_model
from ryzen_nb.graph.prepare import fold_batch_norms
from ryzen_nb.testing import resnet_cnn
from tests.helpers import run


def conv_bn_model(opset: int = 13, dynamic: bool = True, gemm: bool = False) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(rng.random(8).astype(np.float32) + 0.5, n) for n in ("g", "b", "m", "v")]
    if gemm:
        inits.append(numpy_helper.from_array(rng.standard_normal((8, 12)).astype(np.float32), "W"))
        first = helper.make_node("Gemm", ["x", "W"], ["c"], name="gemm", transB=1)
        shape = ["N", 12]
    else:
        inits.append(numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "W"))
        first = helper.make_node("Conv", ["x", "W"], ["c"], name="conv", pads=[1, 1, 1, 1])
        shape = ["N", 3, 8, 8]
    const = helper.make_node("Constant", [], ["two"], name="two", value=numpy_helper.from_array(np.float32(2.0)))
    nodes = [first, helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], name="bn"), const,
             helper.make_node("Mul", ["bn", "two"], ["y"], name="mul")]
    if not dynamic:
        shape = [1, *shape[1:]]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 7
    return model


@pytest.mark.parametrize("gemm", [False, True], ids=["conv", "gemm"])
def test_prepare_folds_and_upgrades_without_changing_outputs(gemm: bool) -> None:
    model = conv_bn_model(gemm=gemm)
    original = model.SerializeToString()
    prepared = prepare(model, input_shapes={"x": [2, 12] if gemm else [2, 3, 8, 8]})
    assert model.SerializeToString() == original  # the user's object is untouched
    ops = [n.op_type for n in prepared.model.graph.node]
    assert "BatchNormalization" not in ops and "Constant" not in ops and "Mul" in ops
    assert any(o.domain == "" and o.version == OPSET for o in prepared.model.opset_import)
    assert prepared.inputs[0].shape == ((2, 12) if gemm else (2, 3, 8, 8))
    assert any("folded 1 BatchNormalization" in s for s in prepared.steps)
    assert any("converted opset 13" in s for s in prepared.steps)
    x = np.random.default_rng(1).standard_normal(prepared.inputs[0].shape).astype(np.float32)
    np.testing.assert_allclose(run(prepared.model, x=x), run(model, x=x), rtol=1e-5, atol=1e-5)
    # the weight keeps its name (mixed-precision settings refer to it)
    assert "W" in {t.name for t in prepared.model.graph.initializer}


def test_prepare_records_the_outputs_of_reference_feeds() -> None:
    """What the quantizer's last check compares with: the prepared model's outputs for the feeds,
    from the session that checks it loads; a feed that does not fit leaves none, never wrong ones."""
    model = conv_bn_model()
    feeds = [{"x": np.random.default_rng(seed).standard_normal((2, 3, 8, 8)).astype(np.float32)} for seed in (1, 2)]
    prepared = prepare(model, sample=feeds[0], reference_feeds=feeds)
    assert len(prepared.reference_outputs) == 2
    for feed, recorded in zip(feeds, prepared.reference_outputs, strict=True):
        assert list(recorded) == ["y"]
        np.testing.assert_array_equal(recorded["y"], run(prepared.model, **feed))
    odd = prepare(model, sample=feeds[0], reference_feeds=[feeds[0], {"x": np.zeros((2, 3, 5, 5), np.float32)}])
    assert odd.reference_outputs == []
    assert prepare(model, sample=feeds[0]).reference_outputs == []


def test_prune_keeps_what_a_nested_body_reads() -> None:
    """An If inside an If's branch reads ``t`` from the main graph: ``t``'s producer stays."""
    from ryzen_nb.graph.builder import make_model
    from ryzen_nb.graph.prepare import prune_unused

    def branch(name: str, source: str) -> onnx.GraphProto:
        return helper.make_graph([helper.make_node("Identity", [source], [f"{name}_y"])], name, [],
                                 [helper.make_tensor_value_info(f"{name}_y", TensorProto.FLOAT, None)])

    inner = helper.make_node("If", ["c"], ["inner_y"], then_branch=branch("inner_then", "t"),
                             else_branch=branch("inner_else", "x"))
    outer_then = helper.make_graph([inner], "outer_then", [], [helper.make_tensor_value_info("inner_y", TensorProto.FLOAT, None)])
    nodes = [helper.make_node("Neg", ["x"], ["t"], name="producer"),
             helper.make_node("If", ["c"], ["y"], then_branch=outer_then, else_branch=branch("outer_else", "x"))]
    graph = helper.make_graph(nodes, "nested", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                                helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = make_model(graph, opset=17)
    prune_unused(model)
    assert [n.name for n in model.graph.node][0] == "producer"
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(session_run(model, x), -x)


def session_run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    import onnxruntime as ort

    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "c": np.array(True)})[0]


def test_conv_transpose_bn_folding() -> None:
    rng = np.random.default_rng(2)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)  # [C_in, C_out/group, k, k], group 1
    inits = [numpy_helper.from_array(w, "W")] + [numpy_helper.from_array(rng.random(3).astype(np.float32) + 0.5, n)
                                                for n in ("g", "b", "m", "v")]
    nodes = [helper.make_node("ConvTranspose", ["x", "W"], ["c"], name="ct"),
             helper.make_node("BatchNormalization", ["c", "g", "b", "m", "v"], ["y"], name="bn")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folded = onnx.ModelProto()
    folded.CopyFrom(model)
    assert fold_batch_norms(folded) == 1
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(run(folded, x=x), run(model, x=x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("bias_shape", [(1, 3, 1, 1), (3, 1, 1), (1,)], ids=["1C11", "C11", "scalar"])
def test_bn_folds_through_a_constant_bias_add(bias_shape) -> None:
    """Paddle2ONNX writes a ConvTranspose's bias as an Add after it, so PP-OCRv4's detection head kept a
    ConvTranspose -> Add -> BatchNormalization: quantized after the Add and scaled per channel by the
    BN after it (Quark folds all three). An Add of one value per channel folds into the bias first."""
    rng = np.random.default_rng(3)
    w = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(rng.standard_normal(bias_shape).astype(np.float32), "c")]
    inits += [numpy_helper.from_array(rng.random(3).astype(np.float32) + 0.5, n) for n in ("g", "b", "m", "v")]
    nodes = [helper.make_node("ConvTranspose", ["x", "W"], ["t"], name="ct", strides=[2, 2]),
             helper.make_node("Add", ["t", "c"], ["a"], name="bias_add"),
             helper.make_node("BatchNormalization", ["a", "g", "b", "m", "v"], ["y"], name="bn")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    folded, names = onnx.ModelProto(), {}
    folded.CopyFrom(model)
    assert fold_batch_norms(folded, names) == 1
    assert [n.op_type for n in folded.graph.node] == ["ConvTranspose"] and set(names) == {"bias_add", "bn"}
    assert "c" not in {t.name for t in folded.graph.initializer}
    x = rng.standard_normal((1, 4, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(run(folded, x=x), run(model, x=x), rtol=1e-5, atol=1e-5)


def test_an_add_that_is_not_a_channel_bias_stays() -> None:
    """A constant varying along the width is not a bias: the BN then stays where it is."""
    rng = np.random.default_rng(4)
    inits = [numpy_helper.from_array(rng.standard_normal((3, 4, 3, 3)).astype(np.float32), "W"),
             numpy_helper.from_array(rng.standard_normal((1, 1, 1, 5)).astype(np.float32), "c")]
    inits += [numpy_helper.from_array(rng.random(3).astype(np.float32) + 0.5, n) for n in ("g", "b", "m", "v")]
    nodes = [helper.make_node("Conv", ["x", "W"], ["t"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["t", "c"], ["a"], name="add"),
             helper.make_node("BatchNormalization", ["a", "g", "b", "m", "v"], ["y"], name="bn")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert fold_batch_norms(model) == 0 and len(model.graph.node) == 3


def test_static_shapes_from_sample_and_errors() -> None:
    model = conv_bn_model()
    prepared = prepare(model, sample={"x": np.zeros((1, 3, 8, 8), np.float32)})
    assert prepared.inputs[0].shape == (1, 3, 8, 8)
    with pytest.raises(ModelError, match=r"dynamic input dimensions: 'x' dimension 0 \(N\)"):
        prepare(model)
    with pytest.raises(ModelError, match="rank 4"):
        prepare(model, input_shapes={"x": [1, 3, 8]})
    with pytest.raises(ModelError, match="does not have; its inputs are \\['x'\\]"):
        prepare(model, input_shapes={"image": [1, 3, 8, 8]})
    with pytest.raises(ModelError, match="dimension 1 is fixed to 3"):
        prepare(model, input_shapes={"x": [1, 4, 8, 8]})


def test_load_errors(tmp_path) -> None:
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        load_model(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"version https://git-lfs.github.com/spec/v1\noid sha256:abc\n")
    with pytest.raises(ModelError, match="Git LFS pointer"):
        load_model(bad)
    with pytest.raises(ModelError, match="folder"):
        load_model(tmp_path)
    with pytest.raises(ModelError, match="file path, bytes or an onnx.ModelProto"):
        load_model(42)


def test_save_is_atomic_and_protects_the_input(tmp_path) -> None:
    model = resnet_cnn(0, blocks=(1,), width=4, image_size=8)
    src = tmp_path / "model.onnx"
    onnx.save(model, str(src))
    before = src.read_bytes()
    with pytest.raises(ModelError, match="over the input model"):
        save_model(model, src, protect=src)
    assert src.read_bytes() == before
    out = save_model(model, tmp_path / "sub" / "out.onnx", protect=src)
    assert out.exists() and not list((tmp_path / "sub").glob(".*tmp"))
    assert load_model(out).graph.name == model.graph.name


def test_invalid_model_is_reported() -> None:
    graph = helper.make_graph([helper.make_node("Relu", ["missing"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(ModelError, match="not valid ONNX"):
        prepare(model)


@pytest.mark.parametrize("layers", [1, 2])
def test_matmul_bias_add_becomes_gemm_keeping_names_and_outputs(layers: int) -> None:
    from ryzen_nb.testing import bert_encoder, random_tokens

    model = bert_encoder(0, layers=layers, hidden=32, heads=2, seq_len=8)
    feeds = {model.graph.input[0].name: random_tokens(1, seq_len=8)}
    prepared = prepare(model)  # layers=1 once hit onnxruntime's own MatMulAddFusion naming bug
    ops = [n.op_type for n in prepared.model.graph.node]
    # 6 projections per layer (query, key, value, output, intermediate, ffn_out), all with a bias
    assert ops.count("Gemm") == 6 * layers and ops.count("MatMul") == 2 * layers  # attention scores, context
    # the query, key and value read one flattened copy of their input: 4 Reshapes into Gemms per layer, not 6
    flattening = [n for n in prepared.model.graph.node if n.op_type == "Reshape" and n.name.endswith("_gemm_reshape_in")]
    assert len(flattening) == 4 * layers
    assert any("into Gemm" in step for step in prepared.steps)
    names = {o for n in prepared.model.graph.node for o in n.output}
    matmul_outputs = {n.output[0] for n in model.graph.node if n.op_type == "MatMul"}
    bias_adds = {n.output[0] for n in model.graph.node if n.op_type == "Add" and set(n.input) & matmul_outputs}
    assert len(bias_adds) == 6 * layers and bias_adds <= names  # what follows a fused pair keeps its names
    gemm_names = {n.name for n in prepared.model.graph.node if n.op_type == "Gemm"}
    assert gemm_names <= {n.name for n in model.graph.node if n.op_type == "MatMul"}
    np.testing.assert_allclose(run(prepared.model, **feeds), run(model, **feeds), rtol=1e-5, atol=1e-5)
    kept = prepare(model, matmul_add_to_gemm=False).model
    assert [n.op_type for n in kept.graph.node].count("Gemm") == 0


def _contrib_op_model() -> tuple[onnx.ModelProto, list[dict[str, np.ndarray]]]:
    """A vector through onnxruntime's com.microsoft Gelu, which onnx's shape inference does not know,
    declared (as exporters do) with its type and no shape; then a Mul by a constant."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Gelu", ["x"], ["g"], name="gelu", domain="com.microsoft"),
             helper.make_node("Mul", ["g", "c"], ["y"], name="mul")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(rng.standard_normal(12).astype(np.float32), "c")],
                              value_info=[helper.make_tensor_value_info("g", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    return model, [{"x": rng.standard_normal(12).astype(np.float32)} for _ in range(4)]


def test_tensors_of_unknown_shape_get_their_rank_from_a_run() -> None:
    """Silero VAD's decoder reads the outputs of an If, whose shapes onnx leaves unknown. The quantizer
    took an unknown rank for 4 and gave their BFP16 quantizers axis 1, which the vectors there lack:
    the quantized model did not load. Preparation now declares the rank a run of the sample shows
    (sizes left open), and the quantizer blocks such a vector along its one axis."""
    from ryzen_nb import formats, quantize

    model, data = _contrib_op_model()
    prepared = prepare(model, sample=data[0])
    declared = {vi.name: vi for vi in prepared.model.graph.value_info}
    assert len(declared["g"].type.tensor_type.shape.dim) == 1
    assert not declared["g"].type.tensor_type.shape.dim[0].HasField("dim_value")
    assert any("recorded the rank of 1 tensor" in step for step in prepared.steps)

    bfp16 = formats.get("BFP16")
    x = data[0]["x"].astype(np.float64)
    gelu = 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))
    c = numpy_helper.to_array(model.graph.initializer[0])
    expected = bfp16.quantize_dequantize(bfp16.quantize_dequantize(gelu.astype(np.float32), axis=0)
                                         * bfp16.quantize_dequantize(c, axis=0), axis=0)
    quantized = quantize(model, None, "BFP16", data, progress=False).model
    np.testing.assert_allclose(run(quantized, x=data[0]["x"]), expected, atol=1e-6)


def test_a_quantized_model_that_does_not_run_is_an_error(monkeypatch) -> None:
    """The load check loads each quantizer function once per process; a call that failed only on
    another tensor (the case above, before its fix) slipped through, and the quantizer's output check,
    which loads the whole model, logged the failure at debug level and returned the broken model."""
    import sys

    from ryzen_nb import quantize
    from ryzen_nb.errors import ConfigError

    monkeypatch.setattr(sys.modules["ryzen_nb.graph.prepare"], "_record_unknown_ranks", lambda model, feed: 0)
    model, data = _contrib_op_model()
    with pytest.raises(ConfigError, match="does not run on the calibration data"):
        quantize(model, None, "BFP16", data, progress=False)
