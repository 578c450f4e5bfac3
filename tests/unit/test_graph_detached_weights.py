"""Sessions and shape inference over a model's graph, its large weights held beside it
(graph.io.without_weights): the same results as over the whole model, which costs a serialization
of every weight each time."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb.graph.builder import make_model
from ryzen_nb.graph.io import DETACHED_BYTES, IN_MEMORY, graph_only, with_weights, without_weights
from ryzen_nb.graph.prepare import ort_session


def model_with_weights_of_every_kind() -> onnx.ModelProto:
    """Large float32, float16, int64 and bool initializers (detached), a large bfloat16 one (kept:
    onnxruntime takes no bfloat16 arrays), and a small shape an inference pass reads for its values."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"),
             numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float16), "w16"),
             numpy_helper.from_array(rng.integers(0, 64, (1024,)).astype(np.int64), "index"),
             numpy_helper.from_array(rng.random((64, 64)) > 0.5, "mask"),
             numpy_helper.from_array(w.astype(ml_dtypes.bfloat16), "wbf16"),
             numpy_helper.from_array(np.array([-1, 32, 2], np.int64), "shape")]
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["a"]),
             n("Cast", ["w16"], ["w32"], to=TensorProto.FLOAT), n("MatMul", ["a", "w32"], ["b"]),
             n("Cast", ["wbf16"], ["wb"], to=TensorProto.FLOAT), n("MatMul", ["b", "wb"], ["c"]),
             n("Where", ["mask", "c", "a"], ["d"]),
             n("Gather", ["d", "index"], ["e"], axis=1),
             n("Reshape", ["e", "shape"], ["y"])]
    graph = helper.make_graph(nodes, "weights", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return make_model(graph)


def test_the_skeleton_holds_stubs_of_the_large_weights_and_gives_them_back() -> None:
    model = model_with_weights_of_every_kind()
    skeleton, weights = without_weights(model)
    assert sorted(weights) == ["index", "mask", "w", "w16"]
    stubs = {t.name: t for t in skeleton.graph.initializer}
    assert {t.name for t in model.graph.initializer} == set(stubs)
    for name in weights:
        assert stubs[name].data_location == TensorProto.EXTERNAL and not stubs[name].raw_data
        assert list(stubs[name].dims) == list(weights[name].dims)
    assert stubs["wbf16"].raw_data and stubs["shape"].raw_data  # kept in the graph
    detached = sum(len(t.raw_data) for t in weights.values())
    assert detached >= 4 * DETACHED_BYTES and skeleton.ByteSize() <= model.ByteSize() - detached + 64 * len(weights)
    assert with_weights(skeleton, weights) == model


def test_a_session_over_the_skeleton_computes_what_the_whole_model_does() -> None:
    model = model_with_weights_of_every_kind()
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    whole = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    expected = whole.run(None, {"x": x})[0]
    got = ort_session(model).run(None, {"x": x})[0]
    assert expected.shape == (1024, 32, 2) and np.array_equal(got, expected)


def test_shape_inference_over_the_skeleton_matches_onnx_and_keeps_the_weights() -> None:
    model = model_with_weights_of_every_kind()
    expected = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    got = graph_only(model, lambda m: onnx.shape_inference.infer_shapes(m, strict_mode=False, data_prop=True))
    assert got == expected
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in got.graph.output}
    assert shapes["y"] == [1024, 32, 2]  # the Reshape's shape was read as a value
    assert not any(e.value == IN_MEMORY for t in got.graph.initializer for e in t.external_data)


def test_an_unknown_stub_location_is_left_for_onnxruntime_to_refuse() -> None:
    """A model whose external data was never loaded is not mistaken for a skeleton's stub."""
    model = model_with_weights_of_every_kind()
    w = next(t for t in model.graph.initializer if t.name == "w")
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    w.external_data.add(key="location", value="weights.bin")
    skeleton, weights = without_weights(model)
    assert "w" not in weights
    with pytest.raises(Exception, match="weights.bin|external"):
        ort_session(model)


def test_the_version_converter_over_the_skeleton_matches_it_over_the_whole_model() -> None:
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((1, 64, 64)).astype(np.float32), "w")
    n = helper.make_node
    nodes = [n("MatMul", ["x", "w"], ["a"]), n("Squeeze", ["a"], ["s"], axes=[0]),  # axes: an input from opset 13
             n("Unsqueeze", ["s"], ["y"], axes=[0])]
    graph = helper.make_graph(nodes, "old", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 64])], [w])
    model = make_model(graph, opset=11)
    from onnx import version_converter
    expected = version_converter.convert_version(model, 17)
    assert graph_only(model, lambda m: version_converter.convert_version(m, 17)) == expected


def test_a_pass_that_renames_a_weight_runs_again_on_the_whole_model() -> None:
    model = model_with_weights_of_every_kind()
    seen: list[bool] = []

    def rename(m: onnx.ModelProto) -> onnx.ModelProto:
        out = onnx.ModelProto()
        out.CopyFrom(m)
        w = next(t for t in out.graph.initializer if t.name == "w")
        seen.append(w.data_location == TensorProto.EXTERNAL)
        w.name = "renamed"
        return out

    result = graph_only(model, rename)
    assert seen == [True, False]  # the skeleton first, then the whole model
    renamed = next(t for t in result.graph.initializer if t.name == "renamed")
    assert renamed.raw_data == next(t for t in model.graph.initializer if t.name == "w").raw_data


def test_constant_folding_over_the_skeleton_folds_and_gives_every_weight_back() -> None:
    """onnxruntime's constant folding gets the graph without its weights and writes them into a file
    beside the optimized model: the folded constant and every large weight come back with their data."""
    from ryzen_nb.graph.prepare import _fold_constants

    model = model_with_weights_of_every_kind()
    rng = np.random.default_rng(2)
    # a constant subgraph over a large weight: w_sum = w_a + w_b, folded into one initializer
    graph = model.graph
    graph.initializer.extend([numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w_a"),
                              numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w_b")])
    graph.node.insert(0, helper.make_node("Add", ["w_a", "w_b"], ["w_sum"], name="constant_add"))
    graph.node.insert(1, helper.make_node("MatMul", ["x", "w_sum"], ["x2"], name="use_sum"))
    graph.node[2].input[0] = "x2"  # the first MatMul now reads x2
    folded = _fold_constants(model)
    assert "constant_add" not in {n.name for n in folded.graph.node}
    assert not any(t.data_location == TensorProto.EXTERNAL for t in folded.graph.initializer)
    x = rng.standard_normal((64, 64)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, expected)


def test_constant_folding_that_changes_nothing_keeps_the_graph_as_written() -> None:
    """onnxruntime writes a graph it was given weights for anew (its own node order, every default
    attribute spelled out); with nothing to fold the graph stays as the user wrote it, byte for byte."""
    from ryzen_nb.graph.prepare import _fold_constants

    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),  # no group, no auto_pad
             n("Relu", ["x"], ["r"], name="relu_first_but_independent"),
             n("Conv", ["r", "w"], ["c2"], name="conv_b", pads=[1, 1, 1, 1]),
             n("Add", ["c1", "c2"], ["y"], name="add")]
    graph = helper.make_graph(nodes, "unchanged", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    model = make_model(graph)
    folded = _fold_constants(model)
    assert [node.SerializeToString() for node in folded.graph.node] == [node.SerializeToString() for node in nodes]
    assert folded.graph.SerializeToString(deterministic=True) == model.graph.SerializeToString(deterministic=True)


def test_serialized_size_counts_what_protobuf_counts() -> None:
    """QuantizationSummary's file sizes come from serialized_size, which counts each large weight by
    its length instead of encoding it: the same number as ByteSize, for every kind of weight (typed
    float_data, raw data, kept bfloat16, an external-data stub, lengths across varint boundaries)."""
    from ryzen_nb.graph.io import serialized_size

    model = model_with_weights_of_every_kind()
    assert serialized_size(model) == model.ByteSize()
    graph = model.graph
    typed = helper.make_tensor("typed", TensorProto.FLOAT, [2048], np.arange(2048, dtype=np.float32).tolist())
    assert not typed.HasField("raw_data")
    graph.initializer.append(typed)
    for n in (1023, 16383, 16384, 2**21):  # raw lengths around the varint's 2- and 3-byte steps
        graph.initializer.append(numpy_helper.from_array(np.zeros(n, np.uint8), f"bytes_{n}"))
    external = graph.initializer.add(name="on_disk", data_type=TensorProto.FLOAT, dims=[4096],
                                     data_location=TensorProto.EXTERNAL)
    external.external_data.add(key="location", value="weights.bin")
    model.metadata_props.add(key="note", value="x" * 300)
    assert serialized_size(model) == model.ByteSize() == len(model.SerializeToString())


def test_the_checker_sees_the_graph_without_the_weight_data() -> None:
    """prepare's call of onnx's checker gets placeholders for the large weights (it would serialize
    them all): it passes a good model and still refuses a bad node."""
    from ryzen_nb.errors import ModelError
    from ryzen_nb.graph.io import for_checker
    from ryzen_nb.graph.prepare import _check

    model = model_with_weights_of_every_kind()
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [1024, 32, 2]))
    checked = for_checker(model)
    assert checked.ByteSize() < model.ByteSize() - 4 * DETACHED_BYTES
    assert {t.name for t in checked.graph.initializer} == {t.name for t in model.graph.initializer}
    _check(model)
    model.graph.node[0].op_type = "NoSuchOperator"
    with pytest.raises(ModelError, match="NoSuchOperator"):
        _check(model)


def test_the_checker_reaches_the_nodes_of_a_model_whose_outputs_have_no_shape() -> None:
    """Exporters often declare graph outputs without a shape: the checker's complaint about that
    came first and stopped it, so a bad node went unchecked; now the model passes and the node not."""
    from ryzen_nb.errors import ModelError
    from ryzen_nb.graph.prepare import _check

    shapeless = onnx.ValueInfoProto(name="y")
    shapeless.type.tensor_type.elem_type = TensorProto.FLOAT
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["h"]), helper.make_node("Relu", ["h"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])], [shapeless])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    _check(model)
    assert not model.graph.output[0].type.tensor_type.HasField("shape")  # the model itself is untouched
    model.graph.node[1].op_type = "NoSuchOperator"
    with pytest.raises(ModelError, match="NoSuchOperator"):
        _check(model)
