"""Two rules found on magika (a tf2onnx export: decomposed LayerNorm, a Softmax head), on small graphs:

* a normalization's epsilon that the sum's 8-bit step would round away is raised to one step, so the
  quantized ``1 / sqrt(variance + eps)`` never divides by 0 (``parameters.guard_divisors``);
* XINT8's MinMSE weighs a Softmax input's values by their softmax probability, so the logits far below
  their row's maximum (which clipping moves, and the Softmax ignores) do not coarsen the scale.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ryzen_nb import quantize
from ryzen_nb.calibration.stats import TensorStats
from ryzen_nb.graph.prepare import ort_session
from ryzen_nb.metrics import cosine


def _layer_norm_model(width: int = 64) -> onnx.ModelProto:
    """x -> (x - mean) * 1 / sqrt(mean((x - mean)^2) + 1e-3), spelled out as tf2onnx does."""
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["d"]),
        helper.make_node("Mul", ["d", "d"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["var_eps"]),
        helper.make_node("Sqrt", ["var_eps"], ["std"]),
        helper.make_node("Reciprocal", ["std"], ["inv"]),
        helper.make_node("Mul", ["d", "inv"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "layer_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, width])],
        [numpy_helper.from_array(np.array(1e-3, np.float32), "eps")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _layer_norm_data(n: int, seed: int) -> list[dict[str, np.ndarray]]:
    """Rows of very different spread: most with a standard deviation of 2 to 4, some nearly constant
    (an offset plus noise of 0.05), whose variance is far below an 8-bit step of the variances."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(n):
        spread = rng.uniform(2, 4, size=(4, 1)).astype(np.float32)
        spread[rng.integers(0, 4)] = 0.05
        x = rng.uniform(-3, 3, size=(4, 1)) + spread * rng.standard_normal((4, 64))
        samples.append({"x": x.astype(np.float32)})
    return samples


@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
def test_a_normalization_epsilon_survives_rounding(preset: str) -> None:
    model = _layer_norm_model()
    summary = quantize(model, None, preset, _layer_norm_data(16, 0), progress=False)
    assert any("divisor guard" in n and "'eps'" in n for n in summary.notes), summary.notes
    # the quantized model divides by a nonzero number on every row: no inf in 1 / sqrt(var + eps)
    q = onnx.ModelProto()
    q.CopyFrom(summary.model)
    q.graph.output.append(helper.make_tensor_value_info("inv", TensorProto.FLOAT, None))
    qs, fs = ort_session(q), ort_session(model)
    evaluation = _layer_norm_data(16, 1)
    for feed in evaluation:
        y, inv = qs.run(["y", "inv"], feed)
        assert np.isfinite(inv).all(), f"{preset}: a quantized variance + eps reached 0"
        assert np.isfinite(y).all()
    ys = np.concatenate([qs.run(["y"], f)[0].ravel() for f in evaluation])
    yf = np.concatenate([fs.run(["y"], f)[0].ravel() for f in evaluation])
    assert cosine(yf.astype(np.float64), ys.astype(np.float64)) > 0.85  # 8 bits of a spelled-out LayerNorm


def _softmax_model(classes: int = 32) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Softmax", ["logits"], ["p"], axis=-1)],
        "softmax_head", [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [8, classes])],
        [helper.make_tensor_value_info("p", TensorProto.FLOAT, [8, classes])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _logits(n: int, seed: int, classes: int = 32) -> list[dict[str, np.ndarray]]:
    """Classifier logits: each row's maximum between -20 and 20, a runner-up 0.5 to 3 below it, and the
    other classes far below (down to about -300), as a classifier confident in one class writes them."""
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(n):
        top = rng.uniform(-20, 20, size=(8, 1))
        z = top - 40 - np.abs(rng.standard_normal((8, classes))) * 100
        z[:, 0] = top[:, 0]
        z[:, 1] = top[:, 0] - rng.uniform(0.5, 3, size=8)
        samples.append({"logits": rng.permuted(z, axis=1).astype(np.float32)})
    return samples


def test_xint8_softmax_input_scale_follows_the_softmax_error() -> None:
    model = _softmax_model()
    q = quantize(model, None, "XINT8", _logits(16, 0), progress=False).model
    qs, fs = ort_session(q), ort_session(model)
    evaluation = _logits(16, 1)
    pq = np.concatenate([qs.run(None, f)[0] for f in evaluation])
    pf = np.concatenate([fs.run(None, f)[0] for f in evaluation])
    # plain MinMSE covers the far-negative logits with a step of 4 (exp(2) = 7x per half step on the
    # top two classes); weighted by probability it takes a step the top classes can be told apart at
    assert cosine(pf.ravel().astype(np.float64), pq.ravel().astype(np.float64)) > 0.95
    assert (pq.argmax(axis=1) == pf.argmax(axis=1)).mean() == 1.0


def test_softmax_relevance_histogram() -> None:
    """Each value counts with its softmax probability along the axis (opset 13) or over the axes from
    ``axis`` on (opset < 13), in the same bins as the plain histogram, through range doublings."""
    x = np.array([[0.0, 0.0, -50.0], [1.0, -1.0, -2.0]], np.float32)
    stats = TensorStats(num_bins=8, softmax=(-1, False))
    stats.update(x)
    stats.update(x * 4)  # the range doubles twice: the weights merge with the counts
    assert stats.hist.sum() == 12 and stats.relevance.sum() == pytest.approx(4.0)
    assert stats.relevance[stats.hist == 0].sum() == 0
    coerced = TensorStats(num_bins=8, softmax=(0, True))
    coerced.update(x)
    assert coerced.relevance.sum() == pytest.approx(1.0)  # one softmax over all six values
