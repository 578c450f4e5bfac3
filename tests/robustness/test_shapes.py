"""Issue 15, item 3: every shape of model users bring quantizes, or gets an error that says why."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ryzen_nb.graph.io as graph_io
from ryzen_nb import get_default_config, quantize
from ryzen_nb.cli import main
from ryzen_nb.errors import ConfigError, ModelError
from ryzen_nb.graph.convert import _retype
from ryzen_nb.testing import random_images, resnet_cnn
from tests.helpers import run
from tests.robustness.models import conv_net, cosine, crnn_like, vad_like


def _dims(vi: onnx.ValueInfoProto) -> list:
    return [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]


def _agree_per_sample(reference: onnx.ModelProto, quantized: onnx.ModelProto, batch: np.ndarray) -> float:
    """The quantized model run on a whole batch against the float model run sample by sample."""
    out = run(quantized, x=batch)
    ref = np.concatenate([run(reference, x=batch[i : i + 1]) for i in range(len(batch))])
    assert out.shape == ref.shape
    return cosine(ref, out)


def test_initializers_listed_as_inputs_are_constants() -> None:
    """IR 3 / opset 7 exports (and torch's keep_initializers_as_inputs) list every weight as an input."""
    model, data = conv_net(opset=7, ir=3)
    model.graph.input.extend(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                             for t in model.graph.initializer)
    for preset in ("XINT8", "A8W8", "BF16"):
        summary = quantize(model, None, preset, data, progress=False)
        assert [i.name for i in summary.model.graph.input] == ["x"]
        assert cosine(run(model, x=data[:1]), run(summary.model, x=data[:1])) >= 0.98
        assert any("listed as graph inputs" in step for step in summary.preparation)


def test_paddle_minus_one_and_unknown_dims_calibrate_with_input_shapes() -> None:
    """[-1, 3, ?, ?] (Paddle): batch-1 samples calibrate with input_shapes given. A size fixes the
    batch for good (the NPU compiles static shapes only); a name keeps it dynamic."""
    model, data = conv_net()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].dim_value = -1
    dims[2].Clear()
    dims[3].Clear()
    summary = quantize(model, None, "A8W8", data, input_shapes={"x": ["N", 3, 8, 8]}, progress=False)
    assert isinstance(_dims(summary.model.graph.input[0])[0], str)  # dynamic batch, named
    assert _dims(summary.model.graph.input[0])[1:] == [3, 8, 8]
    assert _agree_per_sample(model, summary.model, data[:3]) >= 0.99
    fixed = quantize(model, None, "A8W8", data, input_shapes={"x": [1, 3, 8, 8]}, progress=False)
    assert _dims(fixed.model.graph.input[0]) == [1, 3, 8, 8]
    assert cosine(run(model, x=data[:1]), run(fixed.model, x=data[:1])) >= 0.99


@pytest.mark.parametrize("batch", [1, 4])
def test_dynamic_batch_survives_calibration_in_batches(batch) -> None:
    """Calibrating with batches of N must not pin the model's batch to N (nor to 1); a smaller
    last batch is fine too."""
    model, data = conv_net(batch="N")
    feeds = [{"x": data[i : i + batch]} for i in range(0, len(data) - 1, batch)] + [{"x": data[-1:]}]
    summary = quantize(model, None, "XINT8", feeds, progress=False)
    assert _dims(summary.model.graph.input[0])[0] == "N"
    assert _dims(summary.model.graph.output[0])[0] == "N"
    assert _agree_per_sample(model, summary.model, data[:3]) >= 0.98
    assert any("kept the dynamic batch" in n for n in summary.notes)


@pytest.mark.parametrize("preset", ["BFP16", "MX6"])
def test_block_formats_keep_the_dynamic_batch(preset) -> None:
    """A block-format quantizer whose tensor shape is known writes it into its call, batch included:
    BFP16 and MX models of dynamic-batch exports (NudeNet's YOLOv8n, PP-OCRv4) took a batch of 1 only,
    and the quantizer's batch check printed onnxruntime's Reshape error in the user's notebook. The
    first dimension is now -1 in those calls, and a batch computes what its samples compute alone."""
    model, data = conv_net(batch="N")
    summary = quantize(model, None, preset, data, progress=False)
    assert _dims(summary.model.graph.input[0])[0] == "N"
    assert any("kept the dynamic batch" in n for n in summary.notes)
    alone = np.concatenate([run(summary.model, x=data[i : i + 1]) for i in range(3)])
    assert np.array_equal(run(summary.model, x=data[:3]), alone)


def test_a_batch_the_graph_pins_stays_fixed_without_an_error_on_screen(capfd) -> None:
    """Magika squeezes its batch dimension away: the quantizer's check with a batch of 2 fails, as it
    should, and keeps the batch fixed; onnxruntime logged that expected failure in red first."""
    model, data = conv_net(batch="N")
    g = model.graph
    gap = next(n for n in g.node if n.op_type == "GlobalAveragePool")
    flatten = next(n for n in g.node if n.op_type == "Flatten")
    g.initializer.append(numpy_helper.from_array(np.array([0, 3], np.int64), "batch_and_width"))
    g.initializer.append(numpy_helper.from_array(np.array([1, 8], np.int64), "one_by_eight"))
    position = list(g.node).index(flatten)
    g.node.remove(flatten)
    g.node.insert(position, helper.make_node("Squeeze", [gap.output[0], "batch_and_width"], ["squeezed"]))
    g.node.insert(position + 1, helper.make_node("Reshape", ["squeezed", "one_by_eight"], [flatten.output[0]]))
    capfd.readouterr()
    summary = quantize(model, None, "A8W8", data, progress=False)
    assert any("stays fixed" in note for note in summary.notes)
    assert "ExecuteKernel" not in capfd.readouterr().err


def test_batch_dependent_reshape_is_not_frozen() -> None:
    """torch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape folded with a
    fixed batch would pin it; folded with the batch free, the quantized model takes any batch."""
    model, data = conv_net(batch="batch")
    g = model.graph
    flatten = next(n for n in g.node if n.op_type == "Flatten")
    consts = [numpy_helper.from_array(np.array(0, np.int64), "zero"), numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    g.initializer.extend(consts)
    nodes = [helper.make_node("Shape", [flatten.input[0]], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]), helper.make_node("Concat", ["n1", "minus_one"], ["target"], axis=0),
             helper.make_node("Reshape", [flatten.input[0], "target"], [flatten.output[0]], name="view")]
    g.initializer.append(numpy_helper.from_array(np.array([0], np.int64), "axes0"))
    position = list(g.node).index(flatten)
    g.node.remove(flatten)
    for k, n in enumerate(nodes):
        g.node.insert(position + k, n)
    summary = quantize(model, None, "A8W8", data, progress=False)
    assert _dims(summary.model.graph.input[0])[0] == "batch"
    assert _agree_per_sample(model, summary.model, data[:3]) >= 0.99


@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
def test_crnn_with_names_a_quantizer_would_use(preset) -> None:
    """A captcha CRNN (opset 12) whose tensors already carry names like "<weight>_quantized" and
    "scale_1" (a model that went through another tool): the quantized model defined them twice
    ("Duplicate definition of name"), reported as an internal error."""
    model, data = crnn_like()
    summary = quantize(model, None, preset, data, progress=False)
    assert cosine(run(model, input=data[:1]), run(summary.model, input=data[:1])) >= 0.99


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "BF16"])
def test_if_subgraphs_pass_through_intact(preset) -> None:
    """A VAD-like model with an If on its sample rate: preparation broke (a branch never taken for a
    fixed batch does not type-check); the bodies now pass through as they are."""
    model, data = vad_like()
    summary = quantize(model, None, preset, data, progress=False)
    if_node = next(n for n in summary.model.graph.node if n.op_type == "If")
    source_if = next(n for n in model.graph.node if n.op_type == "If")
    assert [len(a.g.node) for a in if_node.attribute] == [len(a.g.node) for a in source_if.attribute]
    assert any("If/Loop/Scan bodies" in n for n in summary.notes)
    ref, out = run(model, **data[0]), run(summary.model, **data[0])
    assert cosine(ref, out) >= 0.98


def test_already_quantized_models_get_a_clear_error() -> None:
    model, data = conv_net()
    qdq = quantize(model, None, "A8W8", data, progress=False).model
    with pytest.raises(ModelError, match=r"already quantized \(QDQ format"):
        quantize(qdq, None, "XINT8", data, progress=False)
    qop = onnx.ModelProto()
    qop.CopyFrom(model)
    qop.graph.node.insert(0, helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"], name="dq"))
    with pytest.raises(ModelError, match="already quantized.*DynamicQuantizeLinear"):
        quantize(qop, None, "XINT8", data, progress=False)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
def test_fp16_model_gets_int8_weights(preset) -> None:
    model, data = conv_net()
    fp16 = _retype(model, TensorProto.FLOAT, TensorProto.FLOAT16, keep_io=False)
    summary = quantize(fp16, None, preset, data.astype(np.float16), progress=False)
    codes = {t.name: t.data_type for t in summary.model.graph.initializer if t.name.endswith("_quantized")}
    weights = [k for k in codes if "weight" in k and "bias" not in k]
    assert weights and all(codes[k] == TensorProto.INT8 for k in weights), codes
    assert summary.model.graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    out = run(summary.model, x=data[:1].astype(np.float16))
    assert out.dtype == np.float16 and cosine(run(model, x=data[:1]), out) >= 0.98


@pytest.mark.parametrize("opset", [6, 28])
def test_opset_outside_the_supported_range(opset) -> None:
    model, data = conv_net()
    model.opset_import[0].version = opset
    with pytest.raises(ModelError, match="opsets 7 to 27"):
        quantize(model, None, "XINT8", data, progress=False)


def test_external_data_end_to_end(tmp_path, monkeypatch) -> None:
    model = resnet_cnn(0, blocks=(1,), width=16, image_size=8)  # int8 weights over onnx's 1 kB threshold
    data = random_images(6, size=8)
    source = tmp_path / "float.onnx"
    onnx.save_model(onnx.ModelProto.FromString(model.SerializeToString()), str(source), save_as_external_data=True,
                    location="float.onnx.data", size_threshold=0)
    qc = get_default_config("A8W8")
    qc.use_external_data_format = True
    out = tmp_path / "q.onnx"
    quantize(source, out, qc, data, progress=False)
    assert (tmp_path / "q.onnx.data").stat().st_size > 0
    assert cosine(run(model, input=data[:1]), run(graph_io.load_model(out), input=data[:1])) >= 0.99
    # over protobuf's 2 GiB limit (made small here), every step goes through external data
    monkeypatch.setattr(graph_io, "PROTOBUF_LIMIT", 1000)
    big = tmp_path / "big.onnx"
    quantize(source, big, "XINT8", data, progress=False)
    assert (tmp_path / "big.onnx.data").exists()
    (tmp_path / "float.onnx.data").unlink()
    with pytest.raises(ModelError, match=r"external data file\(s\) \['float.onnx.data'\]"):
        quantize(source, None, "XINT8", data, progress=False)


def test_folded_node_names_are_accepted_in_nodes_to_exclude() -> None:
    model, data = conv_net()
    qc = get_default_config("A8W8")
    qc.nodes_to_exclude = ["bn1", "relu2"]  # bn1 is folded into conv1 while preparing
    summary = quantize(model, None, qc, data, progress=False)
    note = next(n for n in summary.notes if "'bn1'" in n)
    assert "folded into Conv 'conv1'" in note
    qc.nodes_to_exclude = ["bn_one"]
    with pytest.raises(ConfigError, match="closest"):
        quantize(model, None, qc, data, progress=False)



def test_misspelt_op_types_are_errors_in_the_api_too() -> None:
    """Checked only by the CLI before: from Python, op_types_to_exclude=["conv"] excluded nothing."""
    model, data = conv_net()
    qc = get_default_config("A8W8")
    qc.op_types_to_exclude = ["conv"]
    with pytest.raises(ConfigError, match="op_types_to_exclude names 'conv'.*did you mean 'Conv'"):
        quantize(model, None, qc, data, progress=False)
    qc.op_types_to_exclude = ["LSTM"]  # standard, not in this model: a shared list, fine
    qc.op_types_to_quantize = ["Conv", "Relus"]
    with pytest.raises(ConfigError, match="op_types_to_quantize names 'Relus'"):
        quantize(model, None, qc, data, progress=False)
    qc.op_types_to_quantize = ["Conv"]
    quantize(model, None, qc, data, progress=False)


def test_cli_convert_bf16_takes_input_shapes(tmp_path, capsys) -> None:
    model, _ = conv_net(batch="N")
    model.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    model.graph.input[0].type.tensor_type.shape.dim[3].dim_param = "W"
    source, out = tmp_path / "m.onnx", tmp_path / "m_bf16.onnx"
    onnx.save(model, str(source))
    code = main(["convert-bf16", "--input", str(source), "--output", str(out), "--input-shape", "x:1,3,8,8"])
    assert code == 0 and out.exists(), capsys.readouterr().err
    assert _dims(onnx.load(str(out)).graph.input[0])[2:] == [8, 8]


def test_the_size_check_counts_without_serializing_and_bounds_the_true_size() -> None:
    """too_large_to_serialize adds up tensors and attributes instead of asking protobuf (whose
    ByteSize encodes the whole model); its count must never fall below the true serialized size."""
    rng = np.random.default_rng(0)
    tensors = [numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "raw"),
               helper.make_tensor("typed", onnx.TensorProto.INT64, [300], (-(2**62) + rng.integers(0, 9, 300)).tolist()),
               helper.make_tensor("floats", onnx.TensorProto.FLOAT, [100], rng.standard_normal(100).tolist()),
               # raw data of other widths (counted from the dimensions, not by reading the bytes)
               numpy_helper.from_array(rng.standard_normal((3, 50)).astype(np.float16), "half"),
               numpy_helper.from_array(rng.integers(-9, 9, (7, 9)).astype(np.int64), "int64_raw"),
               helper.make_tensor("bf16_raw", onnx.TensorProto.BFLOAT16, [33], b"\x01\x02" * 33, raw=True),
               helper.make_tensor("int4_raw", onnx.TensorProto.INT4, [17], b"\x21" * 9, raw=True)]
    for t in tensors:
        assert graph_io.tensor_bytes(t) >= t.ByteSize(), t.name
    model, _ = conv_net()
    assert not graph_io.too_large_to_serialize(model)
