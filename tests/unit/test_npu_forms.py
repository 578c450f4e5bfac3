"""Quark's rewrites into NPU forms (ryzen_nb.graph.npu_forms): each computes the FP32 model's function,
applies only where Quark's does, and the quantizer applies them as Quark's presets do."""

from __future__ import annotations

from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.graph.npu_forms import LARGE_POOL, NPU_FORMS, apply_npu_forms
from ryzen_nb.graph.prepare import prepare
from ryzen_nb.quantization.config import get_default_config, resolve
from tests.helpers import run

RNG = np.random.default_rng(7)


def _model(nodes, x_shape, inits=(), opset=17, outputs=("y",)) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs],
                              initializer=list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return onnx.shape_inference.infer_shapes(model)


def _rewritten(model: onnx.ModelProto, option: str, may=lambda node: True) -> tuple[onnx.ModelProto, list[str]]:
    out = onnx.ModelProto()
    out.CopyFrom(model)
    notes = apply_npu_forms(out, {option}, may)
    onnx.checker.check_model(out, full_check=True)
    return out, notes


def _outputs(model: onnx.ModelProto, x: np.ndarray) -> list[np.ndarray]:
    from tests.helpers import session

    return session(model).run(None, {"x": x})


def _ops(model: onnx.ModelProto) -> list[str]:
    return [n.op_type for n in model.graph.node]


def test_a_split_with_sizes_becomes_slices_that_compute_the_same() -> None:
    sizes = numpy_helper.from_array(np.array([2, 3, 1], np.int64), "sizes")
    model = _model([helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], name="split", axis=1)],
                   (1, 6, 4, 4), [sizes], outputs=("a", "b", "c"))
    out, notes = _rewritten(model, "ConvertSplitToSlice")
    assert _ops(out) == ["Slice"] * 3 and out.graph.node[0].name == "split"
    assert "sizes" not in {t.name for t in out.graph.initializer}  # nothing reads it any more
    assert "1 node(s), split" in notes[0]
    x = RNG.standard_normal((1, 6, 4, 4)).astype(np.float32)
    for got, want in zip(_outputs(out, x), _outputs(model, x)):
        np.testing.assert_array_equal(got, want)


def test_splits_without_sizes_and_nodes_not_quantized_stay() -> None:
    """Equal parts (no sizes: Quark converts only explicit sizes) and a node the config does not
    quantize (Quark's should_quantize_node) keep their Split."""
    equal = _model([helper.make_node("Split", ["x"], ["a", "b"], name="even", axis=1, num_outputs=2)],
                   (1, 4, 2, 2), opset=18, outputs=("a", "b"))
    assert _ops(_rewritten(equal, "ConvertSplitToSlice")[0]) == ["Split"]
    sizes = numpy_helper.from_array(np.array([1, 3], np.int64), "sizes")
    model = _model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="kept", axis=1)],
                   (1, 4, 2, 2), [sizes], outputs=("a", "b"))
    out, notes = _rewritten(model, "ConvertSplitToSlice", may=lambda node: node.name != "kept")
    assert _ops(out) == ["Split"] and notes == []


@pytest.mark.parametrize("opset", [17, 18])
def test_a_spatial_reduce_mean_becomes_a_global_average_pool(opset: int) -> None:
    if opset >= 18:
        axes = [numpy_helper.from_array(np.array([2, 3], np.int64), "axes")]
        node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean", keepdims=1)
    else:
        axes = []
        node = helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[2, 3], keepdims=1)
    model = _model([node], (2, 3, 5, 7), axes, opset=opset)
    out, _ = _rewritten(model, "ConvertReduceMeanToGlobalAvgPool")
    assert _ops(out) == ["GlobalAveragePool"] and not out.graph.initializer
    x = RNG.standard_normal((2, 3, 5, 7)).astype(np.float32)
    np.testing.assert_allclose(_outputs(out, x)[0], _outputs(model, x)[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("axes,keepdims,shape", [([2, 3], 0, (1, 3, 4, 4)), ([-2, -1], 1, (1, 3, 4, 4)),
                                                 ([1], 1, (1, 3, 4, 4)), ([2, 3], 1, (1, 3, 4, 4, 2))],
                         ids=["keepdims0", "negative-axes", "channels", "rank5"])
def test_other_reduce_means_stay(axes, keepdims, shape) -> None:
    """Quark converts axes exactly [2, 3] kept; a 5-D tensor is refused here too (a GlobalAveragePool
    would average its third spatial axis as well, which Quark's rewrite does not check)."""
    model = _model([helper.make_node("ReduceMean", ["x"], ["y"], axes=axes, keepdims=keepdims)], shape)
    assert _ops(_rewritten(model, "ConvertReduceMeanToGlobalAvgPool")[0]) == ["ReduceMean"]


def test_a_large_global_pool_is_split_in_two() -> None:
    model = _model([helper.make_node("GlobalAveragePool", ["x"], ["y"], name="gap")], (1, 2, 24, 30))
    assert 24 * 30 > LARGE_POOL
    out, _ = _rewritten(model, "SplitLargeKernelPool")
    assert _ops(out) == ["AveragePool", "GlobalAveragePool"]
    pool = out.graph.node[0]
    assert [list(a.ints) for a in pool.attribute if a.name == "kernel_shape"] == [[4, 5]]  # 24 = 4 x 6, 30 = 5 x 6
    x = RNG.standard_normal((1, 2, 24, 30)).astype(np.float32)
    np.testing.assert_allclose(_outputs(out, x)[0], _outputs(model, x)[0], rtol=1e-5, atol=1e-6)
    small = _model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], (1, 2, 16, 32))  # 512: not above
    assert _ops(_rewritten(small, "SplitLargeKernelPool")[0]) == ["GlobalAveragePool"]
    prime = _model([helper.make_node("GlobalAveragePool", ["x"], ["y"])], (1, 2, 1, 521))  # no factor: one split too large
    assert _ops(_rewritten(prime, "SplitLargeKernelPool")[0]) == ["GlobalAveragePool"]


def test_a_lone_batch_norm_becomes_a_depthwise_conv() -> None:
    stats = [numpy_helper.from_array((RNG.random(3) + 0.5).astype(np.float32), n) for n in ("g", "b", "m", "v")]
    nodes = [helper.make_node("Relu", ["x"], ["r"]),  # nothing to fold it into
             helper.make_node("BatchNormalization", ["r", "g", "b", "m", "v"], ["y"], name="bn", epsilon=1e-3)]
    model = _model(nodes, (2, 3, 4, 4), stats)
    out, notes = _rewritten(model, "ConvertBNToConv")
    assert _ops(out) == ["Relu", "Conv"] and out.graph.node[1].name == "bn"
    assert not {"g", "b", "m", "v"} & {t.name for t in out.graph.initializer}
    assert "depthwise 1x1 Conv" in notes[0]
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(_outputs(out, x)[0], _outputs(model, x)[0], rtol=1e-5, atol=1e-5)
    vector = _model([helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"])], (2, 3), stats)
    assert _ops(_rewritten(vector, "ConvertBNToConv")[0]) == ["BatchNormalization"]  # Quark: 4-D only


def test_presets_turn_the_rewrites_on_as_quark_does() -> None:
    for preset in ("XINT8", "A8W8", "A16W8", "BF16", "BFP16", "MX6"):
        assert resolve(get_default_config(preset)).npu_forms == set(NPU_FORMS), preset
    config = get_default_config("BF16")
    config.extra_options["BF16QDQToCast"] = True  # Quark's patch leaves them off for bf16 as Casts...
    assert resolve(config).npu_forms == set()
    config.extra_options["ConvertSplitToSlice"] = True  # ... unless asked
    assert resolve(config).npu_forms == {"ConvertSplitToSlice"}
    config = get_default_config("XINT8")
    config.extra_options["ConvertBNToConv"] = False
    assert "ConvertBNToConv" not in resolve(config).npu_forms


def _yolo_like_block() -> tuple[onnx.ModelProto, np.ndarray]:
    """A YOLOv8 C2f-style block: Conv, Split into two halves, Conv on one, Concat back."""
    w1 = numpy_helper.from_array((RNG.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((RNG.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32), "w2")
    sizes = numpy_helper.from_array(np.array([4, 4], np.int64), "sizes")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Split", ["r1", "sizes"], ["s0", "s1"], name="split", axis=1),
             helper.make_node("Conv", ["s1", "w2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Concat", ["s0", "r2"], ["y"], name="concat", axis=1)]
    return _model(nodes, (1, 3, 16, 16), [w1, w2, sizes]), RNG.random((8, 1, 3, 16, 16)).astype(np.float32)


def test_quantized_split_runs_on_the_npu_in_xint8_as_after_quark() -> None:
    """YOLOv8n's nine Splits stayed on the CPU in XINT8 (no XINT8 kernel): 4 NPU subgraphs instead of 1.
    Quark hands the compiler Slices; so does ryzen-nb now, and says so in the summary."""
    model, data = _yolo_like_block()
    samples = [{"x": d} for d in data]
    summary = ryzen_nb.quantize(model, None, "XINT8", samples, progress=False)
    assert Counter(_ops(summary.model))["Split"] == 0 and any("Split -> Slices" in n for n in summary.notes)
    program = npu.compile(summary.model, target="STX")
    assert not [n for n in program.cpu_nodes if n.op_type not in ("QuantizeLinear", "DequantizeLinear")]
    assert len(program.subgraphs) == 1
    off = get_default_config("XINT8")
    off.extra_options["ConvertSplitToSlice"] = False
    kept = ryzen_nb.quantize(model, None, off, samples, progress=False)
    assert Counter(_ops(kept.model))["Split"] == 1
    assert [n.op_type for n in npu.compile(kept.model, target="STX").cpu_nodes if n.op_type == "Split"] == ["Split"]


def test_excluded_nodes_keep_their_form() -> None:
    model, data = _yolo_like_block()
    config = get_default_config("A8W8")
    config.nodes_to_exclude = ["split"]
    summary = ryzen_nb.quantize(model, None, config, [{"x": d} for d in data], progress=False)
    assert "Split" in _ops(summary.model)


def test_prepared_models_keep_their_outputs() -> None:
    """The rewrites run on the prepared model: the FP32 function is unchanged on a model with all four."""
    stats = [numpy_helper.from_array((RNG.random(4) + 0.5).astype(np.float32), n) for n in ("g", "b", "m", "v")]
    sizes = numpy_helper.from_array(np.array([1, 3], np.int64), "sizes")
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("BatchNormalization", ["r", "g", "b", "m", "v"], ["n"], name="bn"),
             helper.make_node("Split", ["n", "sizes"], ["s0", "s1"], name="split", axis=1),
             helper.make_node("ReduceMean", ["s1"], ["m1"], name="mean", axes=[2, 3], keepdims=1),
             helper.make_node("GlobalAveragePool", ["s0"], ["p0"], name="gap"),
             helper.make_node("Concat", ["p0", "m1"], ["y"], name="concat", axis=1)]
    model = _model(nodes, (1, 4, 32, 24), stats + [sizes])
    prepared = prepare(model).model
    apply_npu_forms(prepared, set(NPU_FORMS), lambda node: True)
    # the ReduceMean's new pool is over 32 x 24 values as well, so it is split too (Quark's order)
    assert Counter(_ops(prepared)) == Counter({"Relu": 1, "Conv": 1, "Slice": 2, "GlobalAveragePool": 2,
                                               "AveragePool": 2, "Concat": 1})
    x = RNG.standard_normal((1, 4, 32, 24)).astype(np.float32)
    np.testing.assert_allclose(run(prepared, x=x), run(model, x=x), rtol=1e-5, atol=1e-5)
