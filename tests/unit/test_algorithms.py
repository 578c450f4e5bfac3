"""Accuracy recovery: each algorithm on a model where the baseline really loses accuracy, measured on
held-out data (never the calibration samples), plus the config surfaces that switch them on."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ryzen_nb
from ryzen_nb import get_default_config
from ryzen_nb.algorithms import cross_layer_equalize, replace_clip6_with_relu
from ryzen_nb.errors import ConfigError, UnknownNameError
from ryzen_nb.graph.builder import make_model
from ryzen_nb.testing import depthwise_cnn, random_images, resnet_cnn
from tests.helpers import run, session

CALIBRATION = random_images(32, size=32, seed=1)
HELD_OUT = random_images(48, size=32, seed=2)


def outputs(model: onnx.ModelProto, data: np.ndarray) -> np.ndarray:
    s = session(model)
    name = model.graph.input[0].name
    return np.stack([s.run(None, {name: x[None]})[0][0] for x in data]).astype(np.float64)


def fidelity(reference: np.ndarray, test: np.ndarray) -> dict[str, float]:
    cos = np.sum(reference * test, 1) / (np.linalg.norm(reference, axis=1) * np.linalg.norm(test, axis=1))
    return {"cosine": float(cos.mean()), "l2": float(np.linalg.norm(reference - test, axis=1).mean()),
            "agreement": float(np.mean(reference.argmax(1) == test.argmax(1)))}


def quantized(model: onnx.ModelProto, config, data: np.ndarray = CALIBRATION) -> ryzen_nb.QuantizationSummary:
    return ryzen_nb.quantize(model, None, config, data, progress=False)


@pytest.fixture(scope="module")
def separable():
    """Depthwise-separable CNN whose depthwise channels span a factor 1000: per-tensor INT8 collapses."""
    model = depthwise_cnn(0, spread=1000.0)
    return model, outputs(model, HELD_OUT)


@pytest.fixture(scope="module")
def cnn():
    model = resnet_cnn(0, blocks=(1, 1, 1), width=16, image_size=32)
    return model, outputs(model, HELD_OUT)


# -- cross-layer equalization --------------------------------------------------------------------------
def test_cle_leaves_the_float_model_unchanged(separable) -> None:
    model, reference = separable
    equalized, report = cross_layer_equalize(model, steps=-1)
    assert len(report.pairs) == 4 and report.sweeps >= 1  # stem->dw, dw->pw in each block (pw->dw too)
    assert len(report.triplets) == 2  # stem -> dw -> pw and pw -> dw -> pw, as Quark equalizes them
    assert max(report.spread_after) < max(report.spread_before) / 100  # channel ranges brought together
    np.testing.assert_allclose(outputs(equalized, HELD_OUT), reference, rtol=1e-4, atol=1e-5)
    assert onnx.checker.check_model(equalized) is None
    assert report.table().shape[0] == 6 and "triplet" in repr(report)


def test_cle_restores_per_tensor_int8_on_held_out_data(separable) -> None:
    model, reference = separable
    plain = fidelity(reference, outputs(quantized(model, "XINT8").model, HELD_OUT))
    qc = get_default_config("XINT8")
    qc.include_cle = True
    summary = quantized(model, qc)
    equalized = fidelity(reference, outputs(summary.model, HELD_OUT))
    assert plain["cosine"] < 0.8 and plain["agreement"] < 0.5  # the baseline collapses
    assert equalized["cosine"] > 0.99 and equalized["agreement"] >= 0.95
    assert "cle" in summary.reports and any("cross-layer equalization" in n for n in summary.notes)
    assert any("2 Conv-depthwise-pointwise triplet(s)" in n for n in summary.notes), summary.notes


def test_cle_equalizes_gemm_chains() -> None:
    rng = np.random.default_rng(0)
    factors = np.geomspace(0.01, 100, 16)
    w1 = (rng.standard_normal((8, 16)) * factors).astype(np.float32)  # MatMul weight [K, N]
    w2 = (rng.standard_normal((10, 16)) / factors).astype(np.float32)  # Gemm transB weight [N_out, K]
    graph = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
         helper.make_node("Relu", ["h"], ["r"], name="relu"),
         helper.make_node("Gemm", ["r", "w2"], ["y"], name="fc2", transB=1)],
        "mlp", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array((factors * 0.1).astype(np.float32), "b1"),
         numpy_helper.from_array(w2, "w2")])
    model = make_model(graph, opset=17)
    equalized, report = cross_layer_equalize(model)
    assert report.pairs == [("fc1", "fc2")]
    x = rng.standard_normal((20, 8)).astype(np.float32)
    np.testing.assert_allclose(outputs(equalized, x), outputs(model, x), rtol=1e-4, atol=1e-5)
    w1e = numpy_helper.to_array(next(t for t in equalized.graph.initializer if t.name == "w1"))
    ranges = np.abs(w1e).max(axis=0)
    assert ranges.max() / ranges.min() < 20  # was 10**4


def test_clip6_becomes_relu_only_when_asked() -> None:
    model = depthwise_cnn(0, spread=1.0)
    for node in model.graph.node:  # ReLU6 after every depthwise layer, as MobileNetV2 has
        if node.op_type == "Relu" and ".dw." in node.name:
            node.op_type = "Clip"
            node.input.extend(["zero", "six"])
    model.graph.initializer.extend([numpy_helper.from_array(np.array(0, np.float32), "zero"),
                                    numpy_helper.from_array(np.array(6, np.float32), "six")])
    _, report = cross_layer_equalize(model)
    assert not any(".dw" == h[-3:] for h, _ in report.pairs)  # Clip(0, 6) is not homogeneous: no dw -> pw pair
    replaced = replace_clip6_with_relu(model)
    assert len(replaced) == 2 and sum(n.op_type == "Clip" for n in model.graph.node) == 0


def _conv_between(between: list, extra_inits: dict, head_out: int = 4, tail_in: int = 4) -> onnx.ModelProto:
    """Conv(3 -> head_out) -> ``between`` (nodes from "h" to "m") -> Conv(tail_in -> 2), channel ranges spread 1000x."""
    rng = np.random.default_rng(3)
    w1 = (rng.standard_normal((head_out, 3, 1, 1)) * np.geomspace(0.01, 10, head_out)[:, None, None, None]).astype(np.float32)
    w2 = rng.standard_normal((2, tail_in, 1, 1)).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["h"], name="head", group=1), *between,
             helper.make_node("Conv", ["m", "w2"], ["y"], name="tail", group=1)]
    inits = {"w1": w1, "b1": np.full(head_out, 0.1, np.float32), "w2": w2, **extra_inits}
    graph = helper.make_graph(nodes, "pair", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 4, 4])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return make_model(graph, opset=17)


@pytest.mark.parametrize("case", ["pad zeros", "mean over the image", "pad ones", "pad channels", "mean over channels"])
def test_cle_crosses_only_what_keeps_each_channels_scale(case: str) -> None:
    """A zero Pad and a ReduceMean over the image pass a per-channel scale (Quark's pairs cross both); a Pad
    of ones, a Pad that adds channels and a ReduceMean over the channels do not, and end the search (Quark
    checks none of this and would change the model's outputs)."""
    pads = np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)
    relu = helper.make_node("Relu", ["h"], ["r"], name="relu")
    between, inits, head_out, tail_in = {
        "pad zeros": ([relu, helper.make_node("Pad", ["r", "pads"], ["m"], name="pad")], {"pads": pads}, 4, 4),
        "mean over the image": ([relu, helper.make_node("ReduceMean", ["r"], ["m"], name="mean", axes=[2, 3])], {}, 4, 4),
        "pad ones": ([relu, helper.make_node("Pad", ["r", "pads", "one"], ["m"], name="pad")],
                     {"pads": pads, "one": np.array(1.0, np.float32)}, 4, 4),
        "pad channels": ([relu, helper.make_node("Pad", ["r", "pads"], ["m"], name="pad")],
                         {"pads": np.array([0, 1, 0, 0, 0, 1, 0, 0], np.int64)}, 2, 4),
        "mean over channels": ([relu, helper.make_node("ReduceMean", ["r"], ["m"], name="mean", axes=[1])], {}, 4, 1),
    }[case]
    model = _conv_between(between, inits, head_out, tail_in)
    equalized, report = cross_layer_equalize(model)
    x = np.random.default_rng(4).standard_normal((1, 3, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(run(equalized, x=x), run(model, x=x), rtol=1e-4, atol=1e-5)
    assert report.pairs == ([("head", "tail")] if case in ("pad zeros", "mean over the image") else [])


def _stem_net(extra: str = "") -> onnx.ModelProto:
    """x -> stem Conv (channels over three decades) -> Relu -> MaxPool -> BatchNormalization -> Conv; ``extra``:
    "output" also returns the Relu's output, "shared" gives a second Conv the stem's weight, "add" lets an Add
    read the Relu's output too."""
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((4, 3, 3, 3)) * np.geomspace(0.001, 1, 4)[:, None, None, None]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["s"], name="stem", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["s"], ["r"], name="relu"),
             helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["p", "g", "beta", "mean", "var"], ["n"], name="bn"),
             helper.make_node("Conv", ["n", "w2"], ["y"], name="tail")]
    outputs = [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)]
    if extra == "output":
        outputs.append(helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, None))
    if extra == "shared":
        nodes.append(helper.make_node("Conv", ["x", "w"], ["y2"], name="twin", pads=[1, 1, 1, 1]))
        outputs.append(helper.make_tensor_value_info("y2", onnx.TensorProto.FLOAT, None))
    if extra == "add":
        nodes.append(helper.make_node("Add", ["r", "r"], ["y2"], name="add"))
        outputs.append(helper.make_tensor_value_info("y2", onnx.TensorProto.FLOAT, None))
    inits = {"w": w, "b": np.full(4, 0.01, np.float32), "g": rng.uniform(0.5, 2, 4).astype(np.float32),
             "beta": rng.standard_normal(4).astype(np.float32), "mean": rng.uniform(0, 1, 4).astype(np.float32),
             "var": rng.uniform(0.5, 2, 4).astype(np.float32), "w2": rng.standard_normal((2, 4, 1, 1)).astype(np.float32)}
    graph = helper.make_graph(nodes, "stem", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
                              outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    return make_model(graph, opset=17)


@pytest.mark.parametrize("extra", ["", "output", "shared", "add"])
def test_stem_equalization_only_where_batchnormalizations_alone_take_the_scale_back(extra: str) -> None:
    """Quark 0.13's stem step scales the first Conv's weak channels up (here by 16, the limit) into the
    BatchNormalization after it; where the stem's output is also a model output, its weight is shared, or
    another operator reads it, the float model would change, and it does nothing (Quark checks the last only)."""
    model = _stem_net(extra)
    equalized, report = cross_layer_equalize(model)
    x = np.random.default_rng(6).standard_normal((1, 3, 8, 8)).astype(np.float32)
    s = session(model)
    want = s.run(None, {"x": x})
    got = session(equalized).run(None, {"x": x})
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    w = {t.name: numpy_helper.to_array(t) for t in equalized.graph.initializer}["w"]
    if extra:
        assert report.stem is None and np.array_equal(w, numpy_helper.to_array(model.graph.initializer[0]))
    else:
        assert report.stem == "stem" and report.stem_batchnorms == ["bn"] and "stem stem" in repr(report)
        before = np.abs(numpy_helper.to_array(model.graph.initializer[0])).reshape(4, -1).max(axis=1)
        after = np.abs(w).reshape(4, -1).max(axis=1)
        np.testing.assert_allclose(after / before, np.clip(before.max() / before, 1, 16), rtol=1e-6)  # at most 16x
        assert (after / before).max() == pytest.approx(16)


# -- AdaRound / AdaQuant ----------------------------------------------------------------------------------
def _finetuned(model, preset: str, algorithm: str, iterations: int = 40, **extra) -> ryzen_nb.QuantizationSummary:
    return _finetuned_on(model, CALIBRATION, preset, algorithm, iterations, **extra)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
@pytest.mark.parametrize("algorithm", ["adaround", "adaquant"])
def test_finetuning_beats_the_plain_preset_on_held_out_data(cnn, preset: str, algorithm: str) -> None:
    model, reference = cnn
    plain = fidelity(reference, outputs(quantized(model, preset).model, HELD_OUT))
    # AdaRound's rounding variables need some iterations to settle at 0 or 1 (with ~50, the hard
    # rounding at the end is still partly a coin toss); AdaQuant's weights move from the start
    iterations = 200 if algorithm == "adaround" else 40
    summary = _finetuned(model, preset, algorithm, iterations, LearningRate=0.1 if algorithm == "adaround" else 1e-4)
    tuned = fidelity(reference, outputs(summary.model, HELD_OUT))
    report = summary.reports["finetune"]
    assert tuned["l2"] < plain["l2"] * 0.95, (plain, tuned)
    assert len(report.table) == 10 and report.table.kept.all() and (report.table.iterations == iterations).all()
    assert report.table.loss_after.sum() < report.table.loss_before.sum()


def test_adaround_moves_weights_by_at_most_one_code(cnn) -> None:
    model, _ = cnn
    plain = quantized(model, "XINT8").model
    tuned = _finetuned(model, "XINT8", "adaround", iterations=30).model
    codes = lambda m: {t.name: numpy_helper.to_array(t) for t in m.graph.initializer if t.data_type == onnx.TensorProto.INT8}  # noqa: E731
    before, after = codes(plain), codes(tuned)
    weights = [n for n in before if before[n].ndim == 4]
    assert weights and set(weights) <= set(after)
    moved = [np.abs(after[n].astype(int) - before[n].astype(int)) for n in weights]
    assert max(m.max() for m in moved) == 1 and sum(int(m.sum()) for m in moved) > 0


def test_finetuning_is_deterministic_under_a_seed(cnn) -> None:
    model, _ = cnn
    weights = lambda s: [numpy_helper.to_array(t) for t in s.model.graph.initializer]  # noqa: E731
    a, b = (_finetuned(model, "A8W8", "adaquant", iterations=10, FixedSeed=7, LearningRate=1e-3) for _ in range(2))
    assert all(np.array_equal(x, y) for x, y in zip(weights(a), weights(b)))


def test_adaquant_tunes_bf16_and_adaround_refuses_it(cnn) -> None:
    model, reference = cnn
    plain = fidelity(reference, outputs(quantized(model, "BF16").model, HELD_OUT))
    summary = _finetuned(model, "BF16", "adaquant", iterations=20, LearningRate=1e-4)
    assert summary.reports["finetune"].table.kept.all()
    assert fidelity(reference, outputs(summary.model, HELD_OUT))["l2"] < plain["l2"]
    with pytest.raises(ConfigError, match="adaquant"):
        _finetuned(model, "BF16", "adaround")


def test_finetuning_can_be_interrupted_keeping_the_layers_done(cnn, monkeypatch) -> None:
    from ryzen_nb.algorithms import finetune

    real, calls = finetune._tune_layer, []

    def stop_at_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(finetune, "_tune_layer", stop_at_third)
    model, _ = cnn
    report = _finetuned(model, "XINT8", "adaround", iterations=5).reports["finetune"]
    assert report.interrupted and len(report.table) == 2 and "INTERRUPTED" in repr(report)


def test_selective_update_and_early_stop(cnn) -> None:
    model, _ = cnn
    report = _finetuned(model, "XINT8", "adaquant", iterations=200, EarlyStop=True, SelectiveUpdate=True,
                        LearningRate=1e-6).reports["finetune"]
    assert (report.table.iterations < 200).any()  # a learning rate this small stalls: early stop ends layers
    assert (report.table.loss_after <= report.table.loss_before).all()


def test_a_layer_that_tuning_breaks_keeps_its_weights(cnn) -> None:
    """Adam moves each weight by about the learning rate per step whatever its size. PP-OCRv4's head has
    a Conv whose weights are 3e-5 RMS (its BatchNormalization folded in): AdaQuant's default 1e-5 took
    that layer's loss from 0.0003 to 1.09 and the network's cosine from 0.9996 to 0.92, and the update
    was kept, as Quark keeps every update without SelectiveUpdate. Such an update is now refused, loudly."""
    model, _ = cnn
    tiny = onnx.ModelProto()
    tiny.CopyFrom(model)
    conv = [n for n in tiny.graph.node if n.op_type == "Conv"][2]  # the first residual block's second Conv
    w = next(t for t in tiny.graph.initializer if t.name == conv.input[1])
    values = numpy_helper.to_array(w)
    w.CopyFrom(numpy_helper.from_array((values * 3e-5 / np.sqrt(np.mean(values**2))).astype(np.float32), w.name))
    summary = _finetuned(tiny, "BF16", "adaquant", iterations=3)
    table = summary.reports["finetune"].table.set_index("layer")
    assert not table.loc[conv.name, "kept"]
    assert any("came out worse" in n and conv.name in n and "LearningRate" in n for n in summary.notes)
    plain = quantized(tiny, "BF16")
    reference = outputs(tiny, HELD_OUT)
    assert fidelity(reference, outputs(summary.model, HELD_OUT))["cosine"] >= fidelity(reference, outputs(plain.model, HELD_OUT))["cosine"] - 1e-3


# -- bias correction ---------------------------------------------------------------------------------
def test_bias_correction_removes_the_mean_shift(cnn) -> None:
    model, reference = cnn
    plain = outputs(quantized(model, "XINT8").model, HELD_OUT)
    qc = get_default_config("XINT8")
    qc.extra_options["BiasCorrection"] = True
    summary = quantized(model, qc)
    corrected = outputs(summary.model, HELD_OUT)
    shift = lambda q: float(np.abs((q - reference).mean(axis=0)).mean())  # noqa: E731 - mean error per logit
    assert shift(corrected) < 0.7 * shift(plain)
    assert fidelity(reference, corrected)["l2"] < fidelity(reference, plain)["l2"]
    assert len(summary.reports["bias_correction"].table) == 10  # every Conv and the Gemm


def session_threads(monkeypatch, *modules) -> list[tuple[int, int]]:
    """Records (onnxruntime threads, BLAS threads) in force at each ort_session call of ``modules``."""
    from threadpoolctl import threadpool_info

    from ryzen_nb.executor import ort_threads

    seen: list[tuple[int, int]] = []
    for module in modules:
        def spy(*args, _real=module.ort_session, **kwargs):
            seen.append((ort_threads(), max((p["num_threads"] for p in threadpool_info()), default=1)))
            return _real(*args, **kwargs)

        monkeypatch.setattr(module, "ort_session", spy)
    return seen


@pytest.mark.parametrize("algorithm", ["bias_correction", "adaround"])
def test_layer_wise_algorithms_run_on_one_thread(cnn, monkeypatch, algorithm) -> None:
    """Their onnxruntime sessions and numpy's BLAS use one thread while they run (on shared cores
    the spinning pools of both cost more than a second thread gains), and the limits end with them."""
    import ryzen_nb.graph.batching
    import ryzen_nb.graph.segments
    from ryzen_nb.executor import ort_threads

    seen = session_threads(monkeypatch, ryzen_nb.graph.segments, ryzen_nb.graph.batching)
    model, _ = cnn
    if algorithm == "bias_correction":
        qc = get_default_config("XINT8")
        qc.extra_options["BiasCorrection"] = True
        quantized(model, qc)
    else:
        _finetuned(model, "XINT8", algorithm, iterations=2)
    assert seen and set(seen) == {(1, 1)}
    assert ort_threads() == 0


# -- mixed precision -------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def outlier():
    """One depthwise channel 30x larger than the rest: 8-bit activations hurt there, not elsewhere."""
    model = depthwise_cnn(0, spread=1.0, outlier=30.0)
    return model, outputs(model, HELD_OUT)


def _int16_tensors(summary) -> int:
    return sum(1 for f in summary.formats_by_tensor.values() if f == "int16")


def test_automatic_mixed_precision_meets_an_l2_target(outlier) -> None:
    model, reference = outlier
    high, low = quantized(model, "A16W8"), quantized(model, "A8W8")
    l2_high = fidelity(reference, outputs(high.model, HELD_OUT))["l2"]
    l2_low = fidelity(reference, outputs(low.model, HELD_OUT))["l2"]
    target = l2_high + 0.4 * (l2_low - l2_high)
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "L2Target": target, "DataSize": 32}
    summary = quantized(model, qc)
    report = summary.reports["mixed_precision"]
    mixed = fidelity(reference, outputs(summary.model, HELD_OUT))["l2"]
    assert report.mode == "automatic" and 0 < report.switched < len(report.table)
    assert report.final["l2"] <= target
    assert _int16_tensors(summary) < _int16_tensors(high)  # fewer 16-bit layers than all-A16W8
    assert mixed < l2_low  # better than all-A8W8 on held-out data
    table = report.table
    assert {"layers", "ops", "sensitivity_l2", "sensitivity_cosine", "sensitivity_sqnr", "switched", "format"} <= set(table)
    # the layers kept at 16 bits are the most sensitive ones: the outlier's producer and reader
    kept = table[~table.switched]
    assert kept.sensitivity_l2.min() >= table[table.switched].sensitivity_l2.max()
    assert any("block0" in layers for layers in kept.layers)


@pytest.mark.parametrize("free, threads", [(None, 0), (1, 1)])
def test_mixed_precision_search_takes_the_cores_left_free(outlier, monkeypatch, free, threads) -> None:
    """Its sessions use the threads free_threads() finds when it starts (None: onnxruntime's own count)."""
    import ryzen_nb.algorithms.mixed_precision as mixed_precision
    import ryzen_nb.graph.batching
    from ryzen_nb.executor import ort_threads

    monkeypatch.setattr(mixed_precision, "free_threads", lambda: free)
    seen = session_threads(monkeypatch, mixed_precision, ryzen_nb.graph.batching)
    model, _ = outlier
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "NumTarget": 1, "DataSize": 8}
    assert quantized(model, qc).reports["mixed_precision"].switched == 1
    assert seen and {ort for ort, _ in seen} == {threads}
    assert ort_threads() == 0


def test_automatic_mixed_precision_with_a_top1_target(outlier) -> None:
    model, reference = outlier
    labels = reference.argmax(1)[: 16]  # FP32's answers on the analysis samples stand in for labels

    def top1(outs: list) -> float:
        return float(np.mean([o[0].argmax() == label for o, label in zip(outs, labels)]))

    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "Top1AccTarget": 0.0,
                                            "EvaluateFunction": top1, "DataSize": 16}
    report = quantized(model, qc, HELD_OUT[:16]).reports["mixed_precision"]
    assert report.final["top1_drop"] <= 0.0 and "sensitivity_top1" in report.table


def test_dual_quant_nodes_put_both_precisions_on_boundaries(outlier) -> None:
    model, _ = outlier
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "TargetIndices": [0], "NumTarget": 1,
                                            "DualQuantNodes": True, "DataSize": 8}
    summary = quantized(model, qc)
    duals = {k: v for k, v in summary.formats_by_tensor.items() if k.endswith("(dual)")}
    assert duals  # the stem's input (read by it only: switched) and output (read by the unswitched dw layer)
    assert summary.formats_by_tensor["input"] == "int16" and duals == {"input (dual)": "int8", "stem.relu_4 (dual)": "int16"}
    assert summary.formats_by_tensor["stem.relu_4"] == "int8"
    assert np.isfinite(outputs(summary.model, HELD_OUT[:4])).all()


def test_layer_wise_and_element_wise_mixed_precision(outlier) -> None:
    model, reference = outlier
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"TargetOpType": ["Conv"], "TargetQuantType": "QBFP"}
    summary = quantized(model, qc)
    assert summary.reports["mixed_precision"].mode == "layer-wise"  # a BFP target switches without analysis
    conv_weights = [n for n in summary.formats_by_tensor if ".weight" in n and not n.startswith("fc")]
    assert all(summary.formats_by_tensor[n] == "BFP16" for n in conv_weights)
    assert [f for n, f in summary.formats_by_tensor.items() if n.startswith("fc.weight")] == ["int8"]
    qc = get_default_config("BFP16")
    qc.weight_type = "BF16"  # BFP16 activations, BF16 weights
    mixed = quantized(model, qc)
    assert set(mixed.tensors_by_format) == {"BFP16", "bfloat16"}
    assert fidelity(reference, outputs(mixed.model, HELD_OUT))["cosine"] > 0.999


def test_mixed_precision_names_are_checked(outlier) -> None:
    model, _ = outlier
    qc = get_default_config("A8W8")
    qc.extra_options["MixedPrecisionTensor"] = {"QInt16": ["block0.dw.relu8"]}
    with pytest.raises(ConfigError, match="block0.dw.relu_8"):  # the close match is named
        quantized(model, qc)
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "ExcludeLayers": ["block0.dw"]}
    with pytest.raises(ConfigError, match="block0.dw_7"):
        quantized(model, qc)


def test_mixed_precision_search_can_be_interrupted(outlier, monkeypatch) -> None:
    from ryzen_nb.algorithms import mixed_precision

    model, _ = outlier
    real = mixed_precision._Evaluator.__call__
    calls = []

    def interrupt_in_the_search(self, formats, dual=None):
        calls.append(1)
        # baseline, every unit switched, 6 sensitivities, then the search: its first step (the least
        # sensitive unit alone) was measured by the analysis, so the 11th call is its fourth step
        if len(calls) == 11:
            raise KeyboardInterrupt
        return real(self, formats, dual)

    monkeypatch.setattr(mixed_precision._Evaluator, "__call__", interrupt_in_the_search)
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "L2Target": 1e9, "DataSize": 4}
    report = quantized(model, qc).reports["mixed_precision"]
    assert report.interrupted and report.switched == 3 and "INTERRUPTED" in repr(report)


# -- configs -----------------------------------------------------------------------------------------
def test_algorithm_options_are_checked() -> None:
    model = depthwise_cnn(0, spread=1.0, blocks=1, image_size=16)
    data = random_images(4, size=16)
    qc = get_default_config("XINT8")
    qc.include_fast_ft = True
    qc.extra_options["FastFinetune"] = {"NumIteration": 5}
    with pytest.raises(UnknownNameError, match="NumIterations"):
        quantized(model, qc, data)
    qc.extra_options["FastFinetune"] = {"OptimAlgorithm": "adagrad"}
    with pytest.raises(ConfigError, match="'adaround' or 'adaquant'"):
        quantized(model, qc, data)
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "Top1AccTarget": 0.01}
    with pytest.raises(ConfigError, match="EvaluateFunction"):
        quantized(model, qc, data)
    qc.extra_options["AutoMixprecision"] = {"L2Target": 0.1}
    with pytest.raises(ConfigError, match="TargetQuantType"):
        quantized(model, qc, data)


def test_algorithms_from_an_algorithm_list(separable) -> None:
    from ryzen_nb.quark import ModelQuantizer, QConfig, QLayerConfig
    from ryzen_nb.quark.qconfig import (
        AdaQuantConfig,
        AdaRoundConfig,
        BiasCorrectionConfig,
        CLEConfig,
        Int8Spec,
        Int16Spec,
        XInt8Spec,
    )

    model, reference = separable
    config = QConfig(QLayerConfig(input_tensors=XInt8Spec(), weight=XInt8Spec()),
                     algo_config=[AdaRoundConfig(num_iterations=5, batch_size=2), CLEConfig(cle_steps=2),
                                  BiasCorrectionConfig()])
    quantizer = ModelQuantizer(config)
    quantizer.quantize_model(model, None, CALIBRATION[:8])
    reports = quantizer.summary.reports
    assert set(reports) == {"cle", "finetune", "bias_correction"} and reports["cle"].sweeps == 2
    assert fidelity(reference, outputs(quantizer.summary.model, HELD_OUT))["cosine"] > 0.99
    # Quark's legacy call shape: algorithms=[...] with a Config
    q = ModelQuantizer(get_default_config("A8W8"))
    q.quantize_model(model, None, CALIBRATION[:8], algorithms=[CLEConfig()])
    assert "cle" in q.summary.reports
    with pytest.raises(ConfigError, match="keep one"):
        ModelQuantizer(QConfig(QLayerConfig(input_tensors=Int8Spec(), weight=Int8Spec()),
                               algo_config=[AdaRoundConfig(), AdaQuantConfig()]))
    with pytest.raises(UnknownNameError, match="num_iterations"):
        AdaRoundConfig(num_iteration=5)
    from ryzen_nb.quark.qconfig import AutoMixprecisionConfig

    amp = QConfig(QLayerConfig(input_tensors=Int16Spec(), weight=Int8Spec()),
                  algo_config=[AutoMixprecisionConfig(target_layer_config=QLayerConfig(input_tensors=Int8Spec(),
                                                                                       weight=Int8Spec()),
                                                      metric_threshold=0.5, data_size=4)])
    settings = ModelQuantizer(amp).settings.mixed_precision
    assert (settings.act_format, settings.weight_format, settings.l2_target, settings.data_size) == ("int8", "int8", 0.5, 4)


def test_encoder_layers_with_token_rows(monkeypatch) -> None:
    """An encoder's Gemm activations are [tokens, hidden] per sample (no batch axis), and its
    Reshape pins batch 1: fine-tuning and bias correction must read whole samples there too."""
    from ryzen_nb.algorithms import _rig
    from ryzen_nb.testing import bert_encoder, random_tokens

    model = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8)
    calibration, held_out = list(random_tokens(24, seq_len=8, seed=1)[:, None]), random_tokens(24, seq_len=8, seed=2)
    reference = outputs(model, held_out)
    plain = fidelity(reference, outputs(quantized(model, "A8W8", calibration).model, held_out))["l2"]
    for cache in (_rig.FLOAT_CACHE_BYTES, 0):  # the float outputs read in one pass, and layer by layer
        monkeypatch.setattr(_rig, "FLOAT_CACHE_BYTES", cache)
        qc = get_default_config("A8W8")
        qc.extra_options["BiasCorrection"] = True
        corrected = fidelity(reference, outputs(quantized(model, qc, calibration).model, held_out))["l2"]
        assert corrected < plain
        tuned = _finetuned_on(model, calibration, "A8W8", "adaquant", 30, LearningRate=1e-4)
        assert fidelity(reference, outputs(tuned.model, held_out))["l2"] < plain


def _finetuned_on(model, data, preset: str, algorithm: str, iterations: int, **extra) -> ryzen_nb.QuantizationSummary:
    qc = get_default_config(preset)
    qc.include_fast_ft = True
    qc.extra_options["FastFinetune"] = {"OptimAlgorithm": algorithm, "NumIterations": iterations, "BatchSize": 4,
                                        **extra}
    return quantized(model, qc, data)



def test_finetuning_batches_draw_whole_sequences(monkeypatch) -> None:
    """A MatMul on [batch, tokens, hidden] becomes a Gemm on [batch * tokens, hidden]: a batch of
    BatchSize items must hold BatchSize whole token sequences (as Quark batches them), not
    BatchSize single tokens (with 4 tokens a step, AdaRound on an encoder gained nothing)."""
    from ryzen_nb.algorithms import finetune
    from ryzen_nb.testing import bert_encoder, random_tokens

    seq_len = 8
    model = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=seq_len)
    calibration = list(random_tokens(12, seq_len=seq_len, seed=1)[:, None])
    batch = finetune._Objective.batch
    drawn: dict[str, int] = {}

    def checked(self):
        prepared, target = batch(self)
        assert prepared.shape[0] == target.shape[0] == 4 * seq_len, self.t.name  # BatchSize 4 sequences
        sequences = [self.x_q[s : s + seq_len] for s in range(0, len(self.x_q), seq_len)]
        for block in prepared.reshape(4, seq_len, -1):  # each one calibration sample's tokens, in order
            assert any(np.array_equal(block, seq) for seq in sequences), self.t.name
        drawn[self.t.name] = drawn.get(self.t.name, 0) + 1
        return prepared, target

    monkeypatch.setattr(finetune._Objective, "batch", checked)
    summary = _finetuned_on(model, calibration, "A8W8", "adaround", 2)
    assert len(drawn) == len(summary.reports["finetune"].table) >= 6 and set(drawn.values()) == {2}
