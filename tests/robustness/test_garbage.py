"""Issue 15, item 4: loud on garbage — NaN/Inf weights and data are errors naming the tensor,
constant data is a warning, and NaN/Inf outputs never score well in any metric."""

from __future__ import annotations

import logging

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from ryzen_nb import metrics, quantize
from ryzen_nb.errors import CalibrationDataError, ModelError
from ryzen_nb.evaluation import compare
from ryzen_nb.evaluation.folders import evaluate_folders
from ryzen_nb.quantization.run import QuantizationRun
from tests.robustness.models import conv_net


def _with_weight(model: onnx.ModelProto, name: str, edit) -> onnx.ModelProto:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    t = next(t for t in m.graph.initializer if t.name == name)
    values = numpy_helper.to_array(t).copy()
    edit(values)
    t.CopyFrom(numpy_helper.from_array(values, name))
    return m


@pytest.mark.parametrize("preset", ["A8W8", "A16W8", "XINT8", "BFP16", "BF16"])
def test_nan_weight_is_an_error_naming_it(preset) -> None:
    model, data = conv_net()
    bad = _with_weight(model, "conv2.weight", lambda v: v.__setitem__((0, 0, 0, 0), np.nan))
    with pytest.raises(ModelError, match=r"weight 'conv2.weight' holds 1 NaN"):
        quantize(bad, None, preset, data, progress=False)


def test_inf_weight_is_an_error_where_a_scale_takes_it_in() -> None:
    model, data = conv_net()
    bad = _with_weight(model, "fc.weight", lambda v: v.__setitem__((1, 2), np.inf))
    with pytest.raises(ModelError, match=r"'fc.weight' holds 1 Inf"):
        quantize(bad, None, "A8W8", data, progress=False)


def test_nan_computed_inside_the_model_names_the_tensor() -> None:
    """Sqrt of negative inputs: the activation's range would be NaN."""
    model, data = conv_net()
    g = model.graph
    conv2 = next(n for n in g.node if n.name == "conv2")
    g.node.insert(list(g.node).index(conv2), helper.make_node("Sqrt", [conv2.input[0]], ["sqrt_out"], name="sqrt"))
    conv2.input[0] = "sqrt_out"
    relu = next(n for n in g.node if n.name == "relu1")
    relu.op_type = "Identity"  # negative values reach the Sqrt
    with pytest.raises(CalibrationDataError, match="NaN or Inf in tensor 'sqrt_out'"):
        quantize(model, None, "A8W8", data - 0.5, progress=False)


@pytest.mark.parametrize("value", [0.0, 0.25])
def test_constant_calibration_data_is_a_warning(value, caplog) -> None:
    model, data = conv_net()
    with caplog.at_level(logging.WARNING):
        summary = quantize(model, None, "A8W8", np.full_like(data, value), progress=False)
    what = "all zeros" if value == 0 else "constant"
    assert any(f"'x' is {what}" in n for n in summary.notes)
    assert f"'x' is {what}" in caplog.text
    normal = quantize(model, None, "A8W8", data, progress=False)
    assert not any("calibration input" in n for n in normal.notes)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_every_metric_is_nan_on_non_finite_outputs(bad) -> None:
    a = np.linspace(-1, 1, 64, dtype=np.float32).reshape(4, 16)
    b = a.copy()
    b[1, 3] = bad
    for fn in (metrics.cosine, metrics.l2, metrics.mse, metrics.psnr, metrics.sqnr, metrics.max_abs, metrics.ssim):
        assert np.isnan(fn(a, b)), fn.__name__
        assert np.isnan(fn(b, a)), fn.__name__
    assert all(np.isnan(v) for v in metrics.fidelity(a, b).values())
    assert np.isnan(metrics.agreement(a, b)) and np.isnan(metrics.topk_accuracy(b, [0, 1, 2, 3]))
    assert metrics.psnr(a, a) >= 100 and metrics.cosine(a, a) == pytest.approx(1.0)  # finite data unchanged


def test_evaluate_folders_reports_nan(tmp_path) -> None:
    base, quant = tmp_path / "fp32", tmp_path / "q"
    base.mkdir()
    quant.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        x = rng.standard_normal((8, 8)).astype(np.float32)
        np.save(base / f"{i}.npy", x)
        np.save(quant / f"{i}.npy", x + np.float32(np.nan if i == 1 else 0.01))
    result = evaluate_folders(base, quant)
    summary = result.summary()
    assert summary["non_finite_files"] == 1 and result.non_finite_files == ["1.npy"]
    for key in ("mean_cosine", "min_cosine", "mean_psnr", "min_psnr", "mean_sqnr", "mean_l2", "max_abs_diff"):
        assert np.isnan(summary[key]), key
    assert "NaN/Inf in 1 file(s) (1.npy)" in result.report()


def test_compare_scores_nan_outputs_as_nan() -> None:
    model, data = conv_net()
    broken = onnx.ModelProto()
    broken.CopyFrom(model)
    out = broken.graph.output[0].name
    producer = next(n for n in broken.graph.node if out in n.output)
    producer.output[0] = "logits_before"
    broken.graph.initializer.append(numpy_helper.from_array(np.array(np.nan, np.float32), "nan"))
    broken.graph.node.append(helper.make_node("Add", ["logits_before", "nan"], [out], name="poison"))
    result = compare(model, {"broken": broken}, data[:3], targets=(), latency_runs=0, per_layer_samples=2,
                     progress=False)
    row = result.table.loc["broken"]
    for column in ("cosine", "psnr_db", "sqnr_db", "agreement"):
        assert np.isnan(row[column]), column


def test_an_output_that_turns_infinite_is_named_in_a_warning() -> None:
    """Small positive values next to a large one round to code 0 in 8 bits, and Log(0) is -Inf where
    FP32's logarithms are finite. The last check used to compare by cosine, which is NaN then, and said
    nothing: the model came back as a success with -Inf in 7 of its 8 outputs."""
    from onnx import TensorProto

    from ryzen_nb.graph.builder import make_model

    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Log", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "log_of_zero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])])
    rng = np.random.default_rng(0)
    data = [np.concatenate([[100.0], rng.uniform(0.001, 0.01, 7)]).astype(np.float32)[None] for _ in range(4)]
    summary = quantize(make_model(graph, opset=17), None, "A8W8", data, progress=False)
    notes = [n for n in summary.notes if "Output 'y'" in n]
    assert notes and "NaN or Inf value(s)" in notes[0] and "where FP32's are finite" in notes[0], summary.notes
    assert "wrong" in notes[0]


def test_an_output_that_collapses_is_named_in_a_warning(caplog) -> None:
    """A tiny signal riding on a large offset: 8-bit activations cannot hold it, the quantized output
    is constant where FP32's varies. The run says so instead of returning the model as a success."""
    from onnx import TensorProto

    from ryzen_nb.graph.builder import make_model

    nodes = [helper.make_node("Mul", ["x", "small"], ["a"]), helper.make_node("Add", ["a", "offset"], ["b"]),
             helper.make_node("Sub", ["b", "offset"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "small"),
             numpy_helper.from_array(np.array(1000.0, np.float32), "offset")]
    graph = helper.make_graph(nodes, "collapse", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    model = make_model(graph, opset=17)
    onnx.checker.check_model(model)
    data = np.random.default_rng(0).standard_normal((8, 1, 8)).astype(np.float32)
    with caplog.at_level("WARNING"):
        summary = quantize(model, None, "A8W8", list(data), progress=False)
    notes = [n for n in summary.notes if "Output 'y'" in n]
    assert notes and "wrong" in notes[0] and "A16W8" in notes[0]
    # the FP32 side of the check is what preparation recorded, on the same two samples
    run = QuantizationRun.prepare(model, "A8W8", list(data))
    assert len(run.prepared.reference_outputs) == len(run.checked_feeds) == 2
    np.testing.assert_array_equal(run.checked_feeds[1]["x"], data[1])
    assert any("Output 'y'" in r.getMessage() for r in caplog.records)
    # 16-bit activations hold it: no warning
    assert not [n for n in quantize(model, None, "A16W8", list(data), progress=False).notes
                if "Output 'y'" in n]
    # a block format's remedy is more bits per element, not integer options it has no use for
    notes = [n for n in quantize(model, None, "MXFP4E2M1", list(data), progress=False).notes if "Output 'y'" in n]
    assert notes and "more bits per element than MXFP4E2M1" in notes[0] and "MXINT8" in notes[0]
    assert "per_channel" not in notes[0] and "A16W8" not in notes[0]


def test_a_sample_whose_output_collapses_is_named_though_the_pooled_cosine_passes() -> None:
    """The check pooled its two samples: Magika in INT8_TRANSFORMER_DEFAULT labelled its first file right
    (cosine 1.0) and its second wrong (0.09), 0.71 over both, and no warning came; 15 of 16 held-out files
    then got a wrong label. Each sample counts alone too, unless its FP32 output holds little energy (a
    detector's empty image, whose cosine measures noise)."""
    from ryzen_nb.quantization.run import _collapse_problem

    rng = np.random.default_rng(0)
    good, bad = rng.standard_normal(64), rng.standard_normal(64)
    wrong = rng.standard_normal(64)
    assert _collapse_problem([good, bad], [good, bad + 0.1 * wrong]) == ""  # merely rounded
    problem = _collapse_problem([good * 2, bad], [good * 2, wrong])  # pooled: above 0.5
    assert "on sample 2 of 2" in problem and "over all" in problem
    # a near-empty second sample: its noise is no collapse
    assert _collapse_problem([good, bad * 0.01], [good, wrong * 0.01]) == ""
