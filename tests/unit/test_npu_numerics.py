"""NPU numerics: the ONNX fast path equals the numpy reference kernels bit for bit, for every
precision and every kernel kind, and the emulation stays close to the plain QDQ simulation."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.errors import CalibrationDataError, ConfigError
from ryzen_nb.graph.attributes import attribute
from ryzen_nb.graph.builder import GraphBuilder, make_model
from ryzen_nb.graph.prepare import constants_to_initializers, run_with_outputs
from ryzen_nb.npu import bf16_passes, code_passes
from ryzen_nb.npu.kernels import QuantRef, multiplier, rne_shift
from ryzen_nb.npu.kernels.arithmetic import bf16
from ryzen_nb.npu.kernels.elementwise import IntegerAdd, IntegerHardSigmoid
from ryzen_nb.npu.kernels.mac import IntegerConv
from ryzen_nb.npu.kernels.pool import IntegerAveragePool, IntegerGlobalAveragePool
from ryzen_nb.npu.lower import MARKER_DOMAIN
from ryzen_nb.testing import bert_encoder, random_images, random_tokens, resnet_cnn


def op_zoo() -> onnx.ModelProto:
    """Every integer kernel kind in one model: Conv (+bias, fused LeakyRelu / ReLU6), Add, Mul,
    AveragePool, a LeakyRelu of its own, HardSigmoid, GlobalAveragePool, Gemm (+bias), MatMul."""
    rng = np.random.default_rng(0)

    def init(name, shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("W1", (8, 8, 3, 3)), init("B1", (8,), 0.1), init("W2", (8, 8, 1, 1)), init("Wg", (16, 8)),
             init("bg", (16,), 0.1), init("Wm", (16, 4)),
             numpy_helper.from_array(np.float32(0), "zero"), numpy_helper.from_array(np.float32(6), "six")]
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "W1", "B1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("LeakyRelu", ["c1"], ["a1"], name="leaky", alpha=0.1),
        n("Conv", ["a1", "W2"], ["c2"], name="conv2"),
        n("Clip", ["c2", "zero", "six"], ["a2"], name="relu6"),
        n("Add", ["a1", "a2"], ["s"], name="add"),
        n("Mul", ["s", "a2"], ["m"], name="mul"),
        n("AveragePool", ["m"], ["p"], name="avgpool", kernel_shape=[2, 2], strides=[2, 2]),
        n("LeakyRelu", ["p"], ["lp"], name="leaky_alone", alpha=0.2),
        n("HardSigmoid", ["lp"], ["h"], name="hsig", alpha=1 / 6, beta=0.5),
        n("GlobalAveragePool", ["h"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flatten"),
        n("Gemm", ["f", "Wg", "bg"], ["y1"], name="gemm", transB=1),
        n("MatMul", ["y1", "Wm"], ["y"], name="matmul"),
    ]
    graph = helper.make_graph(nodes, "op_zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], inits)
    return make_model(graph)


ZOO_DATA = list(np.random.default_rng(1).standard_normal((16, 1, 8, 8, 8)).astype(np.float32))
INTEGER_KERNELS = {"Conv", "Add", "Mul", "AveragePool", "LeakyRelu", "GlobalAveragePool", "Gemm", "MatMul"}


@pytest.mark.parametrize("preset, expected", [
    ("XINT8", INTEGER_KERNELS), ("A8W8", INTEGER_KERNELS), ("A16W8", INTEGER_KERNELS),
    ("BF16", {"Conv", "Gemm", "MatMul"}), ("BFP16", {"Conv", "Gemm", "MatMul"}),
])
def test_every_kernel_is_bit_exact_against_the_reference(preset: str, expected: set[str]) -> None:
    config = ryzen_nb.get_default_config(preset)
    # SimplifyModel would make the MatMul with a constant weight a Gemm: keep it, for its own kernel
    config.extra_options["SimplifyModel"] = False
    q = ryzen_nb.quantize(op_zoo(), None, config, ZOO_DATA, progress=False).model
    for rounding in ("half_up", "half_even") if preset == "XINT8" else ("half_up",):
        session = npu.NPUSession(q, "STX", rounding=rounding)
        assert not any(node.domain == MARKER_DOMAIN for node in session.emulated.graph.node)  # plain ONNX
        for x in ZOO_DATA[:3]:
            checked = session.check_kernels({"x": x})
            assert checked.mismatches.sum() == 0, checked[checked.mismatches > 0]
        assert expected <= set(checked.op)
    if preset == "XINT8":
        fused = {k.node.name: k.activation for k in session.kernels if k.activation}
        assert fused["conv1"][0] == "leaky" and fused["conv2"][0] == "clip"


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8", "BF16", "BFP16"])
def test_whole_cnn_equals_the_reference_interpreter(preset: str) -> None:
    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16)
    data = random_images(8, size=16)
    q = ryzen_nb.quantize(model, None, preset, data, progress=False).model
    session = npu.NPUSession(q, "STX")
    for x in data[:2]:
        feed = {"input": x[None]}
        assert np.array_equal(session.run(None, feed)[0], session.reference_run(feed)[0])


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8"])
def test_max_pool_on_codes_runs_in_float_with_the_same_numbers(preset: str) -> None:
    # DequantizeLinear -> MaxPool -> QuantizeLinear would become onnxruntime's integer MaxPool (slow):
    # the emulator casts the codes to float32 and back instead
    model = resnet_cnn(0, blocks=(1,), width=8, image_size=16, stem_stride=2)
    data = random_images(8, size=16)
    q = ryzen_nb.quantize(model, None, preset, data, progress=False).model
    session = npu.NPUSession(q, "STX")
    pools = [n for n in session.emulated.graph.node if n.op_type == "MaxPool"]
    producers = {o: n for n in session.emulated.graph.node for o in n.output}
    # it reads float32 codes: cast from int16 codes (A16W8), or kept as floats after the Conv (8-bit,
    # _float_codes): rounded there by the Sub of 1.5 * 2**23 (XINT8), or only clipped where float64
    # requantisation has rounded them already (A8W8)
    expected = {"XINT8": "Sub", "A8W8": "Clip", "A16W8": "Cast"}[preset]
    assert len(pools) == 1 and producers[pools[0].input[0]].op_type == expected
    for x in data[:2]:
        feed = {"input": x[None]}
        assert np.array_equal(session.run(None, feed)[0], session.reference_run(feed)[0])


def test_unnamed_max_pools_on_codes_get_names_of_their_own() -> None:
    """Exporters leave node names empty: two MaxPools on codes must not both write one tensor name."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), n("Relu", ["c"], ["r"]),
             n("MaxPool", ["r"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             n("MaxPool", ["p1"], ["p2"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Relu", ["p2"], ["y"])]
    graph = helper.make_graph(nodes, "pools", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 2, 2])], [w])
    model = make_model(graph)
    data = [rng.standard_normal((1, 4, 8, 8)).astype(np.float32) for _ in range(4)]
    q = ryzen_nb.quantize(model, None, "XINT8", data, progress=False).model
    session = npu.NPUSession(q, "STX")
    emulated = session.emulated.graph
    pools = [p for p in emulated.node if p.op_type == "MaxPool"]
    producers = {o: p for p in emulated.node for o in p.output}
    assert len(pools) == 2 and all(producers[p.input[0]].op_type in ("Cast", "Sub") for p in pools)  # float codes
    names = [o for p in emulated.node for o in p.output]
    assert len(names) == len(set(names)), "a tensor written twice"
    onnx.checker.check_model(session.emulated, full_check=True)
    for x in data[:2]:
        assert np.array_equal(session.run(None, {"x": x})[0], session.reference_run({"x": x})[0])


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8"])
def test_embedding_gather_takes_codes_and_dequantizes_only_its_rows(preset: str, monkeypatch) -> None:
    # DequantizeLinear -> Gather would dequantize the whole table on every run (MiniLM: 14 ms of 79)

    model = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8, vocab=4000)
    data = [{"input_ids": t[None]} for t in random_tokens(6, seq_len=8, vocab=4000)]
    q = ryzen_nb.quantize(model, None, preset, data, progress=False).model
    table = next(n.input[0] for n in q.graph.node if n.op_type == "DequantizeLinear"
                 and n.input[0].startswith("embeddings.word"))
    session = npu.NPUSession(q, "STX")
    readers = [n for n in session.emulated.graph.node if table in n.input]
    assert [n.op_type for n in readers] == ["Gather"]
    with monkeypatch.context() as m:
        m.setattr(code_passes, "_gathers_on_codes", lambda model: None)
        whole_table = npu.NPUSession(q, "STX")
    assert [n.op_type for n in whole_table.emulated.graph.node if table in n.input] == ["DequantizeLinear"]
    for feed in data[:3]:
        # the same numbers (reference_run is no judge here: its float LayerNormalization may differ
        # from onnxruntime's in the last bit, and a quantizer after it then rounds one code the other way)
        assert np.array_equal(session.run(None, feed)[0], whole_table.run(None, feed)[0])


def test_fp32_model_of_opset_11_with_shape_arithmetic_emulates_in_bf16() -> None:
    """Two failures of BF16 emulation on real detectors (YOLOv8n, PP-OCRv4): a Concat of int64 shape
    values on the NPU was rounded to bf16 like a float tensor (Expand then refused its float shape),
    and a model of opset 11 got Casts to bfloat16, which ONNX has from opset 13."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((8, 4, 3, 3)).astype(np.float32), "w")
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             n("Relu", ["c"], ["r"], name="relu"),
             n("Shape", ["r"], ["s"], name="shape"),
             n("Concat", ["s"], ["s2"], name="concat", axis=0),
             n("Expand", ["r", "s2"], ["y"], name="expand")]
    graph = helper.make_graph(nodes, "shapes", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    session = npu.NPUSession(model, "STX")
    x = rng.standard_normal((1, 4, 8, 8)).astype(np.float32)
    y = session.run(None, {"x": x})[0]
    fp32 = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert y.shape == fp32.shape and np.abs(y - fp32).max() <= 2**-7 * np.abs(fp32).max()  # bf16 arithmetic
    assert session.program.summary()  # compiled, with the Conv on the NPU
    assert any(a.op_type == "Conv" and a.device == "NPU" for a in session.program.nodes)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8", "BF16", "BFP16"])
def test_encoder_kernels_are_bit_exact(preset: str) -> None:
    model = bert_encoder(0, layers=1, hidden=32, heads=2, seq_len=8)
    tokens = random_tokens(8, seq_len=8)
    q = ryzen_nb.quantize(model, None, preset, list(tokens[:, None]), progress=False).model
    session = npu.NPUSession(q, "STX")
    checked = session.check_kernels({model.graph.input[0].name: tokens[:1]})
    assert len(checked) and checked.mismatches.sum() == 0
    assert {"Gemm", "MatMul"} <= set(checked.op)


def test_a_bf16_rounded_output_is_not_rounded_again_by_the_next_kernel() -> None:
    """One float kernel rounds its output to bf16 (Cast to bfloat16, Cast back), the next rounds its
    operand again: the emulated model reads the bfloat16 instead (bfloat16 -> float32 -> bfloat16
    gives every value back); the float32 tensors that only the second rounding read come back for
    inspection, and every kernel still checks out bit for bit."""
    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16, stem_stride=2)
    session = npu.NPUSession(model, "STX")  # BF16 on Strix
    g = session.emulated.graph
    producers = {o: n for n in g.node for o in n.output}

    def cast(name: str, to: int) -> bool:
        n = producers.get(name)
        return n is not None and n.op_type == "Cast" and attribute(n, "to", 0) == to

    round_trips = [n for n in g.node if n.op_type == "Cast" and attribute(n, "to", 0) == TensorProto.BFLOAT16
                   and cast(n.input[0], TensorProto.FLOAT) and cast(producers[n.input[0]].input[0], TensorProto.BFLOAT16)]
    assert not round_trips
    widened = json.loads(next(p.value for p in session.emulated.metadata_props if p.key == bf16_passes.BF16_WIDENED))
    assert widened and not set(widened) & set(producers)  # dropped from the graph...
    feed = {"input": random_images(1, size=16)}
    values = session.tensor_values(list(widened), feed)  # ...and back on request, the bf16 values as float32
    name = next(iter(widened))
    assert values[name].dtype == np.float32 and np.array_equal(values[name], bf16(values[name]))
    checked = session.check_kernels(feed)
    assert len(checked) and checked.mismatches.sum() == 0


def _ref(codes, scale, zp, dtype, values=None) -> QuantRef:
    return QuantRef(codes, np.float32(scale), np.asarray(zp, dtype), np.dtype(dtype), values)


def test_per_channel_a8w8_model_is_emulated_bit_exactly() -> None:
    """Per-channel weights (zero points a vector of zeros) made NPUSession fail: the zero points were
    broadcast along the wrong axis of the Conv weight, and ConvInteger takes a single one."""
    qc = ryzen_nb.get_default_config("A8W8")
    qc.per_channel = True
    q = ryzen_nb.quantize(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), None, qc, random_images(8, size=16),
                          progress=False).model
    session = npu.NPUSession(q, "STX")
    checked = session.check_kernels({"input": random_images(1, size=16)})
    assert {"Conv", "Gemm"} <= set(checked.op) and checked.mismatches.sum() == 0


def test_xint8_requantisation_by_hand() -> None:
    """A 1x1 convolution worked out on paper: x pos 4, w pos 5 -> accumulator pos 9, output pos 6,
    so the accumulator is shifted right by 3 with DPU_ROUND (ties toward +inf) or half-even."""
    w = np.array([[[[3]], [[-2]]]], np.int8)  # [1, 2, 1, 1]
    node = helper.make_node("Conv", ["x", "w"], ["y"])
    k = IntegerConv(node, "XINT8", inputs=[_ref("x", 2.0**-4, 0, np.int8)], weight=_ref("w", 2.0**-5, 0, np.int8, w),
                    output=_ref("y", 2.0**-6, 0, np.int8), attrs={"kernel_shape": [1, 1]})
    # acc = 3*x0 - 2*x1 = 12, -12, 20, 4, 637 -> /8 = 1.5, -1.5, 2.5, 0.5, 79.625
    x = np.array([[4, 0], [-4, 0], [4, -4], [0, -2], [127, -128]], np.int8).T.reshape(1, 2, 5, 1)
    assert k.reference([x], "half_up")[0].ravel().tolist() == [2, -1, 3, 1, 80]  # DPU_ROUND: ties toward +inf
    assert k.reference([x], "half_even")[0].ravel().tolist() == [2, -2, 2, 0, 80]
    k.output = _ref("y", 2.0**-9, 0, np.int8)  # no shift: 637 saturates, -12 does not
    assert k.reference([x], "half_up")[0].ravel().tolist() == [12, -12, 20, 4, 127]


@pytest.mark.parametrize("dtype, zp, activation", [
    (np.int16, -300, None), (np.uint16, 30000, ("relu",)), (np.int8, 5, ("clip", -0.5, 0.75)), (np.uint8, 131, None),
])
def test_unsigned_shift_rounds_half_to_even_like_the_integer_reference(dtype, zp, activation) -> None:
    """IntegerKernel.shift_to_codes (uint64 BitShift, the quotient's parity added for half to even,
    one Clip, a wrapping Cast) against rne_shift + activation + saturation: ties of both parities and
    signs, values beyond saturation, zero points of both signs."""
    from ryzen_nb.graph.builder import GraphBuilder

    node = helper.make_node("Add", ["a", "b"], ["y"])
    k = IntegerAdd(node, "A16W8", inputs=[], output=_ref("y", 0.01, zp, dtype), activation=activation)
    bound = 2.0**45
    for shift in (1, 3, 17):
        q = np.arange(-70000, 70000, 7, dtype=np.int64)
        num = np.concatenate([q << shift, (q << shift) + (1 << (shift - 1)), (q << shift) - (1 << (shift - 1)),
                              (q << shift) + 1, np.array([-(2**45), 2**45 - 1], np.int64)])
        b = GraphBuilder(prefix="t")
        y = k.shift_to_codes(b, "num", shift, bound)
        assert y is not None
        graph = helper.make_graph(b.nodes, "g", [helper.make_tensor_value_info("num", TensorProto.INT64, [None])],
                                  [helper.make_tensor_value_info(y, helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), None)])
        session = ort.InferenceSession(make_model(graph).SerializeToString(), providers=["CPUExecutionProvider"])
        got = session.run(None, {"num": num})[0]
        expected = k._saturate(k._activate(rne_shift(num, shift)))
        assert got.dtype == expected.dtype and np.array_equal(got, expected), shift


def test_xint8_hard_sigmoid_by_hand() -> None:
    """HardSigmoid as the DPU computes it (docs/npu-numerics.md#dpu-rewrites): (x + 3) * 2731 / 2**14, not (x + 3) / 6.
    Input and output at position 7: y = (code + 384) * 2731 / 2**14 in output codes. Where (x + 3)/6
    is a half (codes 3 mod 6) the 2731 tips it up in both roundings; 2730 would tip it down."""
    node = helper.make_node("HardSigmoid", ["x"], ["y"], alpha=1 / 6, beta=0.5)
    k = IntegerHardSigmoid(node, "XINT8", inputs=[_ref("x", 2.0**-7, 0, np.int8)], output=_ref("y", 2.0**-7, 0, np.int8))
    x = np.array([-128, -9, -3, 0, 3, 9, 127], np.int8)
    # 42.672, 62.508, 63.508, 64.008, 64.508, 65.508, 85.177 (exactly /6: 42.667, 62.5, 63.5, 64, 64.5, 65.5, 85.167)
    for rounding in ("half_up", "half_even"):
        assert k.reference([x], rounding)[0].tolist() == [43, 63, 64, 64, 65, 66, 85]
    # input at position 5 (±4): below -3 the clip at 0, above +3 saturation; y = (code + 96) * 2731 / 2**12
    k.inputs = [_ref("x", 2.0**-5, 0, np.int8)]
    x = np.array([-128, -97, -90, 0, 96, 127], np.int8)  # -21.3, -0.67, 4.0005, 64.008, 128.016, 148.7
    assert k.reference([x], "half_up")[0].tolist() == [0, 0, 4, 64, 127, 127]


def test_average_pools_multiply_as_the_dpu_does() -> None:
    """XINT8 average pools multiply by the DPU's k/2**n instead of dividing (docs/npu-numerics.md#dpu-rewrites): a 7x7
    mean of 120s is 120 * 49 * 21/1024 = 120.59 -> 121, a 3x3 mean of 100s 100 * 9 * 7/64 = 98.4 -> 98.
    A8W8 divides exactly, unless the model carries the DPU's correction as a Mul the kernel computes."""
    one = dict(inputs=[_ref("x", 1.0, 0, np.int8)], output=_ref("y", 1.0, 0, np.int8))
    gap = IntegerGlobalAveragePool(helper.make_node("GlobalAveragePool", ["x"], ["y"]), "XINT8", **one)
    x = np.full((1, 1, 7, 7), 120, np.int8)
    assert gap.reference([x])[0].ravel().tolist() == [121]
    gap.precision = "A8W8"
    assert gap.reference([x])[0].ravel().tolist() == [120]
    pool = IntegerAveragePool(helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3]), "XINT8",
                              attrs={"kernel_shape": [3, 3]}, **one)
    x = np.full((1, 1, 3, 3), 100, np.int8)
    assert pool.reference([x])[0].ravel().tolist() == [98]
    pool.precision = "A8W8"
    assert pool.reference([x])[0].ravel().tolist() == [100]
    pool.attrs["dpu_multiplier"] = 9 * 7 / 64  # AveragePool -> Mul(63/64), as Quark rewrites it for the DPU
    assert pool.reference([x])[0].ravel().tolist() == [98]
    pool.precision, pool.attrs["dpu_multiplier"] = "XINT8", 1.5  # XINT8 follows the model's Mul too: 150
    pool.output = _ref("y", 2.0, 0, np.int8)  # in steps of 2: 75
    assert pool.reference([x])[0].ravel().tolist() == [75]


def test_float_scale_multiplier_follows_voe() -> None:
    # C * 2**-shift closest to m with C <= 2**23 - 1 (A12)
    for m in (0.0173, 1.0, 3.9e-5, 0.5):
        c, shift = multiplier(m)
        assert 2**22 <= c <= 2**23 - 1
        assert abs(c * 2.0**-shift - m) <= 2.0 ** -(shift + 1)
    # ... and the shift rounds half to even: 1/2, 3/2, 5/2, -1/2, -3/2; 11/4, 10/4, -10/4
    assert rne_shift(np.array([1, 3, 5, -1, -3]), 1).tolist() == [0, 2, 2, 0, -2]
    assert rne_shift(np.array([11, 10, -10]), 2).tolist() == [3, 2, -2]


def test_xint8_emulation_stays_close_to_the_qdq_simulation() -> None:
    """The tolerance users can expect on a CNN: mean cosine >= 0.995 and the same top-1 class on at
    least 90% of inputs between the NPU arithmetic and onnxruntime's QDQ simulation (measured: 0.9993, 100%)."""
    q = ryzen_nb.quantize(resnet_cnn(0), None, "XINT8", random_images(32), progress=False).model
    report = npu.divergence(q, random_images(24, seed=7), "STX", per_layer=True)
    row = report.table.iloc[0]
    assert report.ok and report.samples == 24
    assert row.cosine_mean >= 0.995 and row.top1_agreement >= 0.9
    assert report.layers.cosine.min() > 0.99 and report.first_divergent_layer is None
    assert "no output diverges" in report.summary()


def test_divergence_loads_and_indexes_the_model_once(tmp_path, monkeypatch) -> None:
    """divergence() on a path: one file read, one load_model, one ModelIndex (shared by NPUSession,
    compile and the kernels), one shape inference. Before: the model was loaded twice and its shapes
    inferred twice (the marking pass inferred its own)."""
    import sys
    from collections import Counter

    from ryzen_nb.graph import io
    from ryzen_nb.graph.index import ModelIndex

    q = ryzen_nb.quantize(resnet_cnn(0, blocks=(1,), width=8, image_size=16), None, "XINT8", random_images(8, size=16),
                          progress=False).model
    path = tmp_path / "model_xint8.onnx"
    onnx.save(q, str(path))
    calls: Counter[str] = Counter()

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(onnx, "load", counted("onnx.load", onnx.load))
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counted("infer_shapes", onnx.shape_inference.infer_shapes))
    monkeypatch.setattr(ModelIndex, "__init__", counted("ModelIndex", ModelIndex.__init__))
    load_model = io.load_model
    for module in [m for name, m in sys.modules.items() if name.startswith("ryzen_nb")]:
        if getattr(module, "load_model", None) is load_model:  # every module that imported it
            monkeypatch.setattr(module, "load_model", counted("load_model", load_model))
    report = npu.divergence(path, random_images(2, size=16, seed=3), "PHX", per_layer=True)
    assert report.samples == 2 and report.layers is not None
    assert calls == {"onnx.load": 1, "load_model": 1, "ModelIndex": 1, "infer_shapes": 1}


def test_divergence_flags_outputs_beyond_the_threshold() -> None:
    q = ryzen_nb.quantize(resnet_cnn(0, blocks=(1,), width=8, image_size=16), None, "XINT8", random_images(8, size=16),
                          progress=False).model
    strict = npu.divergence(q, random_images(4, size=16, seed=3), "PHX", cosine_threshold=1.0, per_layer=True)
    assert not strict.ok and strict.flagged == ["logits"]
    assert strict.first_divergent_layer is not None and "diverges" in strict.summary()
    assert "DIVERGES" in repr(strict)
    with pytest.raises(CalibrationDataError):
        npu.divergence(q, [], "PHX")
    with pytest.raises(CalibrationDataError, match="shape"):
        npu.divergence(q, random_images(2, size=8), "PHX")


def test_session_surface_and_options() -> None:
    q = ryzen_nb.quantize(resnet_cnn(0, blocks=(1,), width=8, image_size=16), None, "XINT8", random_images(8, size=16),
                          progress=False).model
    session = npu.NPUSession(q, "PHX")
    assert [i.name for i in session.get_inputs()] == ["input"] and [o.name for o in session.get_outputs()] == ["logits"]
    out = session.run(["logits"], {"input": random_images(1, size=16)})
    assert out[0].shape == (1, 10) and session.target.name == "PHX"
    table = session.emulation()  # (its precision column is XINT8 throughout: PHX runs nothing else)
    # the MACs, the Add and the pool compute with NPU arithmetic, and so do the Relus fused into the
    # convolutions and into the residual Add (one quantizer, after the Relu, as Quark writes it); the
    # Flatten computes as in the QDQ graph
    assert set(table[table.arithmetic == "integer"].op) == {"Conv", "Relu", "Add", "GlobalAveragePool", "Gemm"}
    assert sorted(table[table.arithmetic == "exact as in the QDQ simulation"].op) == ["Flatten"]
    assert "NPUSession PHX" in repr(session)
    with pytest.raises(ConfigError, match="half_up"):
        npu.NPUSession(q, "PHX", rounding="nearest")


@pytest.mark.parametrize("simplify", [False, True], ids=["MatMul", "as Gemm"])
@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
def test_large_reductions_stay_exact(preset: str, simplify: bool) -> None:
    """Integer MACs run as float32 Conv/MatMul only while every partial sum is below 2**23; larger
    ones use ConvInteger / MatMulInteger (one integer MAC costs about one float32 MAC), or where
    their requantisation does not apply (XINT8 with half-even rounding) split the weight in base-16
    digits (float64 sum). All routes must equal the reference."""
    rng = np.random.default_rng(3)
    w_conv = numpy_helper.from_array(rng.standard_normal((8, 512, 3, 3)).astype(np.float32), "w_conv")
    w_big = numpy_helper.from_array(rng.standard_normal((16384, 4)).astype(np.float32), "w_big")
    shape = numpy_helper.from_array(np.array([1, 16384], np.int64), "shape")
    nodes = [helper.make_node("Conv", ["x", "w_conv"], ["c"], name="conv", pads=[1, 1, 1, 1]),  # K = 4608
             helper.make_node("Relu", ["c"], ["r"], name="relu"),
             helper.make_node("Tile", ["r", "reps"], ["t"], name="tile"),
             helper.make_node("Reshape", ["t", "shape"], ["flat"], name="flat"),
             helper.make_node("MatMul", ["flat", "w_big"], ["y"], name="matmul")]  # K = 16384
    reps = numpy_helper.from_array(np.array([1, 8, 4, 4], np.int64), "reps")  # [1, 8, 4, 4] -> 16384 values
    graph = helper.make_graph(nodes, "large", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 512, 4, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])], [w_conv, w_big, shape, reps])
    data = list(rng.standard_normal((8, 1, 512, 4, 4)).astype(np.float32))
    config = ryzen_nb.get_default_config(preset)
    config.extra_options["SimplifyModel"] = simplify  # a MatMul with a constant weight becomes a Gemm
    q = ryzen_nb.quantize(make_model(graph), None, config, data, progress=False).model
    for rounding in ("half_up", "half_even") if preset == "XINT8" else ("half_up",):
        session = npu.NPUSession(q, "STX", rounding=rounding)
        checked = session.check_kernels({"x": data[0]})
        assert set(checked.op) == {"Conv", "Gemm" if simplify else "MatMul"} and checked.mismatches.sum() == 0
        ops = [n.op_type for n in session.emulated.graph.node]
        digits = preset == "XINT8" and rounding == "half_even"
        assert ops.count("Conv") == (2 if digits else 0)  # the 3x3 convolution in two base-16 digits, or
        assert ops.count("ConvInteger") == (0 if digits else 1)  # one integer MAC
        assert "MatMulInteger" in ops  # 16384 products of 8-bit codes: too many even for digits



def test_fp32_accumulation_is_within_one_bf16_unit_of_exact() -> None:
    model = resnet_cnn(0, blocks=(1, 1), width=16, image_size=16)
    exact = npu.NPUSession(model, "STX")
    fast = npu.NPUSession(model, "STX", accumulation="fp32")
    assert not any(n.op_type == "Slice" for n in fast.emulated.graph.node)  # no im2col: onnxruntime's own Conv
    for x in random_images(3, size=16):
        a, b = exact.run(None, {"input": x[None]})[0], fast.run(None, {"input": x[None]})[0]
        ulp = np.spacing(np.abs(a).astype(np.float32)) * 2**16  # one bf16 unit at each value
        assert np.all(np.abs(a - b) <= ulp * 1.01)
        checked = fast.check_kernels({"input": x[None]})
        assert (checked.mismatches <= 0.01 * checked.elements).all()
    with pytest.raises(ConfigError, match="accumulation"):
        npu.NPUSession(model, "STX", accumulation="fp64")


def test_divergence_does_not_read_a_feature_map_as_class_scores() -> None:
    """A [1, 8, 16, 16] feature map agreeing to cosine 0.999 was flagged 'diverges' because its last
    axis was taken for classes (found by notebook 8)."""
    from onnx import TensorProto, helper, numpy_helper

    w = np.random.default_rng(0).normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["features"])],
        "features", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, [1, 8, 16, 16])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    q = ryzen_nb.quantize(model, None, "XINT8", random_images(8, size=16), progress=False).model
    report = npu.divergence(q, random_images(4, size=16, seed=5), "PHX")
    row = report.table.iloc[0]
    assert np.isnan(row.top1_agreement) and row.cosine_mean > 0.99
    assert report.ok


@pytest.mark.parametrize("dtype, zero_point", [(np.uint8, 128), (np.uint8, 0), (np.uint8, 255), (np.int8, 0), (np.int8, -128)])
def test_dequantized_8bit_codes_with_power_of_two_scales_are_bf16_numbers(dtype, zero_point) -> None:
    """The emulator's bf16 evaluation skips rounding such inputs: that must change nothing."""
    from ryzen_nb.npu.kernels.arithmetic import bf16
    from ryzen_nb.npu.kernels.nonlinear import on_bf16_grid

    info = np.iinfo(dtype)
    codes = np.arange(info.min, info.max + 1).astype(np.int64)
    for exponent in (-126, -40, -5, 0, 7, 119):
        ref = QuantRef("x", np.float32(2.0**exponent), np.asarray(zero_point, dtype), np.dtype(dtype))
        assert on_bf16_grid(ref), exponent
        values = ((codes - zero_point) * 2.0**exponent).astype(np.float32)
        np.testing.assert_array_equal(bf16(values), values)
    for scale, zp_dtype in ((2.0**-127, dtype), (2.0**120, dtype), (0.031, dtype), (2.0**-5, np.int16)):
        ref = QuantRef("x", np.float32(scale), np.asarray(0, zp_dtype), np.dtype(zp_dtype))
        assert not on_bf16_grid(ref), (scale, zp_dtype)
    # the range matters: 8-bit codes times 2**-140 are float32 subnormals that bf16 cannot hold
    values = ((codes - zero_point) * 2.0**-140).astype(np.float32)
    assert not np.array_equal(bf16(values), values)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8", "A16W8"])
def test_value_moving_operators_move_codes_with_the_same_numbers(preset: str) -> None:
    """DequantizeLinear -> Split / Concat / Transpose / Resize (nearest) -> QuantizeLinear with one
    quantization runs on the codes (onnxruntime's integer Resize takes 8-bit codes only)."""
    rng = np.random.default_rng(0)
    consts = [numpy_helper.from_array((rng.standard_normal((8, 4, 3, 3)) * 0.3).astype(np.float32), "w1"),
              numpy_helper.from_array((rng.standard_normal((4, 8, 1, 1)) * 0.3).astype(np.float32), "w2"),
              numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
              numpy_helper.from_array(np.array([3, 5], np.int64), "split")]
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c"], pads=[1, 1, 1, 1]), n("Relu", ["c"], ["r"]),
             n("Split", ["r", "split"], ["s0", "s1"], axis=1), n("Concat", ["s1", "s0"], ["cat"], axis=1),
             n("Transpose", ["cat"], ["t"], perm=[0, 1, 3, 2]),
             n("Resize", ["t", "", "scales"], ["up"], mode="nearest"), n("Conv", ["up", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "moves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 16, 16])], consts)
    data = [rng.standard_normal((1, 4, 8, 8)).astype(np.float32) for _ in range(4)]
    config = ryzen_nb.get_default_config(preset)
    config.extra_options["ConvertSplitToSlice"] = False  # the Split itself (on by default it becomes Slices)
    q = ryzen_nb.quantize(make_model(graph), None, config, data, progress=False).model
    session = npu.NPUSession(q, "STX")
    emulated = session.emulated.graph
    producers = {o: p for p in emulated.node for o in p.output}
    moving = {p.op_type: producers[p.input[0]].op_type for p in emulated.node
              if p.op_type in ("Split", "Concat", "Transpose", "Resize")}
    assert moving == {"Split": "QuantizeLinear", "Concat": "Split", "Transpose": "Concat",
                      "Resize": "DequantizeLinear" if preset == "A16W8" else "Transpose"}, moving
    for x in data[:2]:
        assert np.array_equal(session.run(None, {"x": x})[0], session.reference_run({"x": x})[0])


@pytest.mark.parametrize("same", [True, False])
def test_a_concat_of_two_quantizations_stays_in_float(same: bool) -> None:
    n = helper.make_node
    scale, finer = numpy_helper.from_array(np.float32(0.125), "s"), numpy_helper.from_array(np.float32(0.0625), "f")
    zp = numpy_helper.from_array(np.uint8(128), "zp")
    second = "s" if same else "f"
    nodes = [n("QuantizeLinear", ["x", "s", "zp"], ["qa"]), n("DequantizeLinear", ["qa", "s", "zp"], ["a"]),
             n("QuantizeLinear", ["x", second, "zp"], ["qb"]), n("DequantizeLinear", ["qb", second, "zp"], ["b"]),
             n("Concat", ["a", "b"], ["cat"], axis=1),
             n("QuantizeLinear", ["cat", "s", "zp"], ["qy"]), n("DequantizeLinear", ["qy", "s", "zp"], ["y"])]
    graph = helper.make_graph(nodes, "concat", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 3, 3])], [scale, finer, zp])
    session = npu.NPUSession(make_model(graph), "STX")
    producers = {o: p for p in session.emulated.graph.node for o in p.output}
    concat = next(p for p in session.emulated.graph.node if p.op_type == "Concat")
    assert {producers[i].op_type for i in concat.input} == {"QuantizeLinear" if same else "DequantizeLinear"}
    x = np.random.default_rng(1).uniform(-20, 20, (1, 2, 3, 3)).astype(np.float32)  # saturates at 0.125 and 0.0625
    expected = ort.InferenceSession(make_model(graph).SerializeToString(), providers=["CPUExecutionProvider"])
    assert np.array_equal(session.run(None, {"x": x})[0], expected.run(None, {"x": x})[0])


def test_xint8_codes_are_written_centred_where_every_reader_centres_them(monkeypatch) -> None:
    """XINT8's uint8 codes with zero point 128 are written as int8 codes with zero point 0 when
    every reader centres them anyway (Cast -> Sub 128 before a Conv goes): the same numbers, fewer
    operators; the stem's MaxPool on float codes takes them centred too. Codes a kernel writes
    otherwise stay uint8. check_kernels still sees uint8 codes everywhere."""

    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16, stem_stride=2)
    data = random_images(8, size=16)
    q = ryzen_nb.quantize(model, None, "XINT8", data, progress=False).model
    monkeypatch.setattr(code_passes, "_float_codes", lambda model: None)  # the pass after, tested below
    session = npu.NPUSession(q, "STX")
    with monkeypatch.context() as m:
        m.setattr(code_passes, "_centred_codes", lambda model: None)
        uncentred = npu.NPUSession(q, "STX")

    def subs_of_128(s: npu.NPUSession) -> int:
        consts = {t.name: numpy_helper.to_array(t) for t in s.emulated.graph.initializer}
        return sum(1 for n in s.emulated.graph.node if n.op_type == "Sub" and n.input[1] in consts
                   and consts[n.input[1]].size == 1 and float(consts[n.input[1]]) == 128.0)

    assert subs_of_128(uncentred) == 8 and subs_of_128(session) == 0
    twins = {name: source for name, (source, centred) in code_passes.code_sources(session.emulated).items() if centred}
    types = {t.name: t.type.tensor_type.elem_type
             for t in onnx.shape_inference.infer_shapes(session.emulated).graph.value_info}
    assert twins and all(types[twin] == TensorProto.INT8 for twin in twins.values())
    producers = {o: n for n in session.emulated.graph.node for o in n.output}
    readers = {i: n for n in session.emulated.graph.node for i in n.input}
    pool = next(n for n in session.emulated.graph.node if n.op_type == "MaxPool")
    # the stem's MaxPool on float codes (Cast -> MaxPool -> Cast) takes centred codes and writes them
    assert producers[pool.input[0]].input[0] in twins.values()
    assert types[readers[pool.output[0]].output[0]] == TensorProto.INT8
    # GlobalAveragePool's kernel writes its codes with a Cast of its own: they stay uint8, and the
    # DequantizeLinear before the Flatten (which requantizes) keeps zero point 128
    flatten = next(n for n in session.emulated.graph.node if n.op_type == "Flatten")
    pooled = producers[flatten.input[0]]
    assert pooled.op_type == "DequantizeLinear" and types[pooled.input[0]] == TensorProto.UINT8
    for x in data[:2]:
        feed = {"input": x[None]}
        assert np.array_equal(session.run(None, feed)[0], uncentred.run(None, feed)[0])
        assert np.array_equal(session.run(None, feed)[0], session.reference_run(feed)[0])
        checked = session.check_kernels(feed)
        assert checked.mismatches.sum() == 0, checked[checked.mismatches > 0]
        # by the quantized model's names, as uint8 codes
        codes = session.tensor_values(sorted(twins), feed)
        assert all(codes[name].dtype == np.uint8 for name in twins)
        expected = run_with_outputs(uncentred.emulated, sorted(twins), feed)
        assert all(np.array_equal(codes[name], expected[name]) for name in twins)


@pytest.mark.parametrize("preset", ["XINT8", "A8W8"])
def test_codes_read_only_as_floats_stay_floats(monkeypatch, preset: str) -> None:
    """int8 codes with zero point 0 that every reader casts or dequantizes are rounded in float32
    (Clip, then + and - 1.5 * 2**23): no QuantizeLinear, no Cast before the next Conv, a Mul in
    place of each DequantizeLinear; the same numbers, and the codes read back through
    tensor_values as the quantized model holds them."""

    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16, stem_stride=2)
    data = random_images(8, size=16)
    q = ryzen_nb.quantize(model, None, preset, data, progress=False).model
    session = npu.NPUSession(q, "STX")
    with monkeypatch.context() as m:
        m.setattr(code_passes, "_float_codes", lambda model: None)
        as_codes = npu.NPUSession(q, "STX")

    def count(s: npu.NPUSession, op: str) -> int:
        return sum(1 for n in s.emulated.graph.node if n.op_type == op)

    floats = [name for name, (source, _) in code_passes.code_sources(session.emulated).items() if source.endswith("_float")]
    assert floats
    assert count(session, "QuantizeLinear") < count(as_codes, "QuantizeLinear")
    assert count(session, "Cast") < count(as_codes, "Cast")
    assert count(session, "DequantizeLinear") < count(as_codes, "DequantizeLinear")
    holders = {source for source, _ in code_passes.code_sources(session.emulated).values() if source.endswith("_float")}
    producers = {o: n for n in session.emulated.graph.node for o in n.output}
    convs = [n for n in session.emulated.graph.node if n.op_type == "Conv"]
    if preset == "XINT8":  # symmetric activations: the float codes go straight into the Convs
        assert any(c.input[0] in holders for c in convs)
        # rounded by 1x1 depthwise Convs where only Convs read them, by Add and Sub where a residual Add does
        assert {producers[h].op_type for h in holders} == {"Conv", "Sub"}
    else:  # A8W8 requantises in float64 and rounds there: the Clip alone, and no Sub of a zero point 0
        assert any(c.input[0] in holders for c in convs)
        assert {producers[h].op_type for h in holders} == {"Clip"}
    for x in data[:2]:
        feed = {"input": x[None]}
        assert np.array_equal(session.run(None, feed)[0], as_codes.run(None, feed)[0])
        assert np.array_equal(session.run(None, feed)[0], session.reference_run(feed)[0])
        checked = session.check_kernels(feed)
        assert checked.mismatches.sum() == 0, checked[checked.mismatches > 0]
        got, expected = session.tensor_values(floats, feed), as_codes.tensor_values(floats, feed)
        for name in floats:
            assert got[name].dtype == expected[name].dtype == q_dtype(preset)
            assert np.array_equal(got[name], expected[name])



def _conv_quantize_conv(activation: str, second_reader: str | None = None) -> onnx.ModelProto:
    """x -> Conv -> activation -> QuantizeLinear(1, int8 0) -> Cast -> Conv (and ``second_reader``
    of the codes: a DequantizeLinear, or a Cast for a Conv whose weight is an input)."""
    g = GraphBuilder()
    w1 = np.array([1.0, 0.5, 2.0, -1.0], np.float32).reshape(4, 1, 1, 1)
    v = g.op("Conv", "x", g.const(w1, hint="w1"), group=4)
    if activation == "relu":
        v = g.op("Relu", v)
    elif activation == "clip":
        v = g.op("Clip", v, g.const(np.float32(-3.0), hint="lo"), g.const(np.float32(47.3), hint="hi"))
    codes = g.op("QuantizeLinear", v, g.const(np.float32(1.0), hint="one"), g.const(np.int8(0), hint="zero"))
    y = g.op("Conv", g.op("Cast", codes, to=TensorProto.FLOAT), g.const(np.ones((2, 4, 1, 1), np.float32), hint="w2"))
    outputs = [y]
    if second_reader == "dequantize":
        outputs.append(g.op("DequantizeLinear", codes, g.const(np.float32(0.25), hint="s")))
    elif second_reader == "conv with an input weight":
        outputs.append(g.op("Conv", g.op("Cast", codes, to=TensorProto.FLOAT), "w3"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 5, 6])]
    if second_reader == "conv with an input weight":
        inputs.append(helper.make_tensor_value_info("w3", TensorProto.FLOAT, [2, 4, 1, 1]))
    graph = helper.make_graph(g.nodes, "g", inputs, [helper.make_tensor_value_info(o, TensorProto.FLOAT, None)
                                                      for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    constants_to_initializers(model)  # as lower() has them
    return model


@pytest.mark.parametrize("activation", ["none", "relu", "clip"])
@pytest.mark.parametrize("second_reader", [None, "dequantize", "conv with an input weight"])
def test_codes_only_convs_read_are_rounded_by_depthwise_convs(activation: str, second_reader: str | None) -> None:
    """Codes that only Convs read are rounded by two 1x1 depthwise Convs (bias + and - 1.5 * 2**23),
    so onnxruntime keeps its blocked layout between the Convs; a Relu or a constant Clip before the
    quantizer merges into its Clip. Ties round half to even and out-of-range values saturate, as
    QuantizeLinear does; any other reader keeps the Add and the Sub."""

    model = _conv_quantize_conv(activation, second_reader)
    lowered = onnx.ModelProto()
    lowered.CopyFrom(model)
    code_passes._float_codes(lowered)
    ops = [n.op_type for n in lowered.graph.node]
    assert "QuantizeLinear" not in ops and ops.count("Clip") == 1
    assert "Relu" not in ops
    depthwise = [n for n in lowered.graph.node if n.op_type == "Conv" and attribute(n, "group", 1) == 4
                 and n.input[0] != "x"]  # the model's own first Conv has 4 groups too
    assert len(depthwise) == (2 if second_reader is None else 0)
    assert ("Sub" in ops) == (second_reader is not None)
    rng = np.random.default_rng(0)
    # halves (ties) both ways, values past both ends of int8, negatives and zero
    x = (rng.integers(-600, 600, (1, 4, 5, 6)) / 2).astype(np.float32)
    x[0, :, 0, :3] = [[-0.5, 0.5, 1.5]] * 4
    feed = {"x": x}
    if second_reader == "conv with an input weight":
        feed["w3"] = rng.normal(size=(2, 4, 1, 1)).astype(np.float32)
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        options = ort.SessionOptions()
        options.graph_optimization_level = level
        expected, got = (ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
                         .run(None, feed) for m in (model, lowered))
        assert all(np.array_equal(e, g) for e, g in zip(expected, got))



def test_float_codes_leave_a_float16_dequantizer_its_integer_codes() -> None:
    """Codes read by a DequantizeLinear with a float16 scale stay integer codes: as float32 codes its
    Mul would mix float32 and float16. With a float32 scale they become float codes and a Mul."""

    def model(scale: np.generic) -> onnx.ModelProto:
        g = GraphBuilder()
        codes = g.op("QuantizeLinear", "x", g.const(np.float32(1.0), hint="one"), g.const(np.int8(0), hint="zero"))
        y = g.op("DequantizeLinear", codes, g.const(scale, hint="s"))
        graph = helper.make_graph(g.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                                  [helper.make_tensor_value_info(g.op("Relu", y), helper.np_dtype_to_tensor_dtype(
                                      np.asarray(scale).dtype), None)])
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
        constants_to_initializers(m)
        return m

    x = {"x": np.array([[-300.0, -2.5, -0.5, 0.5, 1.5], [2.5, 3.49, 126.5, 127.5, 900.0]], np.float32)}
    for scale, ops in ((np.float32(0.5), ["Clip", "Add", "Sub", "Mul", "Relu"]),
                       (np.float16(0.5), ["QuantizeLinear", "DequantizeLinear", "Relu"])):
        before = model(scale)
        after = onnx.ModelProto()
        after.CopyFrom(before)
        code_passes._float_codes(after)
        assert [n.op_type for n in after.graph.node] == ops
        expected, got = (ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, x)[0]
                         for m in (before, after))
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


def test_renamed_codes_never_take_a_name_the_model_uses() -> None:
    """The passes on codes rename tensors (``_centred``, ``_float``) and add a zero point: where the
    model already holds a tensor of that name, the group stays as it was and the outputs are the same."""

    model = resnet_cnn(0, blocks=(1, 1), width=8, image_size=16, stem_stride=2)
    data = random_images(8, size=16)
    q = ryzen_nb.quantize(model, None, "XINT8", data, progress=False).model
    plain = npu.NPUSession(q, "STX")
    renamed = sorted(code_passes.code_sources(plain.emulated))
    assert renamed
    clashing = onnx.ModelProto()
    clashing.CopyFrom(q)
    # graph outputs named as the renamed twins of the first code tensor, and the zero point's name
    first = renamed[0]
    names = [first + "_centred", first + "_centred_float", first + "_float", "npu_centred_zero_point"]
    for name in names:
        clashing.graph.node.append(helper.make_node("Identity", ["input"], [name]))
        clashing.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    session = npu.NPUSession(clashing, "STX")
    produced = [o for n in session.emulated.graph.node for o in n.output]
    assert len(produced) == len(set(produced))
    assert first not in code_passes.code_sources(session.emulated)
    for x in data[:2]:
        feed = {"input": x[None]}
        got = session.run(None, feed)
        assert np.array_equal(got[0], plain.run(None, feed)[0])
        assert all(np.array_equal(g, x[None]) for g in got[1:])

def q_dtype(preset: str) -> type:
    return np.uint8 if preset == "XINT8" else np.int8


def test_codes_a_graph_output_shows_stay_uint8() -> None:
    n = helper.make_node
    consts = [numpy_helper.from_array(np.float32(0.125), "s"), numpy_helper.from_array(np.uint8(128), "zp"),
              numpy_helper.from_array(np.full((2, 2, 1, 1), 0.5, np.float32), "w")]
    nodes = [n("QuantizeLinear", ["x", "s", "zp"], ["codes"]), n("DequantizeLinear", ["codes", "s", "zp"], ["a"]),
             n("Conv", ["a", "w"], ["c"]), n("QuantizeLinear", ["c", "s", "zp"], ["qc"]),
             n("DequantizeLinear", ["qc", "s", "zp"], ["y"])]
    graph = helper.make_graph(nodes, "codes_out", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 3, 3]),
                               helper.make_tensor_value_info("codes", TensorProto.UINT8, [1, 2, 3, 3])], consts)
    session = npu.NPUSession(make_model(graph), "STX")
    x = np.random.default_rng(0).uniform(-20, 20, (1, 2, 3, 3)).astype(np.float32)
    plain = ort.InferenceSession(make_model(graph).SerializeToString(), providers=["CPUExecutionProvider"])
    y, codes = session.run(None, {"x": x})
    assert codes.dtype == np.uint8 and np.array_equal(codes, plain.run(["codes"], {"x": x})[0])
    assert np.array_equal(y, session.reference_run({"x": x})[0])


@pytest.mark.parametrize("preset", ["XINT8", "BF16"])
def test_check_kernels_says_by_how_much_a_kernel_differs(monkeypatch, preset: str) -> None:
    """A reference one code (integer kernel) or one bf16 unit (float kernel) away from what the
    emulated graph computed shows as mismatches with max_units 1: the size of a difference tells a
    float library's last bit from a defect."""
    q = ryzen_nb.quantize(op_zoo(), None, preset, ZOO_DATA, progress=False).model
    session = npu.NPUSession(q, "STX")
    conv = next(k for k in session.kernels if k.op == "Conv")
    real = conv.reference

    def one_unit_off(inputs, rounding="half_up"):
        out = [np.array(o, copy=True) for o in real(inputs, rounding)]
        flat = out[0].reshape(-1)
        if flat.dtype.kind == "f":
            flat[:3] = (flat[:3].view(np.uint32) + 0x10000).view(np.float32)  # the next bf16 numbers
        else:
            flat[:3] = np.where(flat[:3] < np.iinfo(flat.dtype).max, flat[:3] + 1, flat[:3] - 1)
        return out

    monkeypatch.setattr(conv, "reference", one_unit_off)
    checked = session.check_kernels({"x": ZOO_DATA[0]}).set_index("op")
    assert checked.loc["Conv", "mismatches"].max() == 3 and checked.loc["Conv", "max_units"].max() == 1.0
    others = checked.drop(index="Conv")
    assert (others.mismatches == 0).all() and (others.max_units == 0).all()


@pytest.mark.parametrize("op, attrs, least", [("Sigmoid", {}, None), ("Sigmoid", {}, -9.5), ("Elu", {}, None),
                                              ("Elu", {"alpha": 0.5}, None)])
def test_bf16_evaluation_is_correctly_rounded_on_every_bf16_input(op: str, attrs: dict, least: float | None) -> None:
    """onnxruntime's own Sigmoid and Elu stray by thousands of bf16 units in a tail (Sigmoid below
    -9.5, Elu of a small negative x): the emulated evaluation must give the correctly rounded bf16
    value of the true function on every finite bf16 input (float64 numpy, rounded once), and
    onnxruntime's Sigmoid, kept where the input never goes below ONNXRUNTIME_SIGMOID_EXACT_FROM,
    on every one from there up."""
    from ryzen_nb.npu.kernels.arithmetic import bf16
    from ryzen_nb.npu.kernels.nonlinear import Bf16Evaluation, evaluate_in_bf16

    x = (np.arange(1 << 16, dtype=np.uint32) << 16).view(np.float32)
    x = x[np.isfinite(x) & (x >= (-np.inf if least is None else least))]
    b = GraphBuilder(prefix="t")
    node = helper.make_node(op, ["x"], ["y"], name="under_test", **attrs)
    (out,) = evaluate_in_bf16(b, node, ["x"], [True], least=least)
    assert any(n.op_type == op for n in b.nodes) == (least is not None)
    graph = helper.make_graph(b.nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [None])])
    got = ort.InferenceSession(make_model(graph).SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    x64 = x.astype(np.float64)
    with np.errstate(over="ignore"):
        true = 1 / (1 + np.exp(-x64)) if op == "Sigmoid" else np.where(x64 > 0, x64, attrs.get("alpha", 1.0) * np.expm1(x64))
    want = bf16(true)
    wrong = got != want
    allowed = np.zeros_like(wrong)
    if attrs:  # alpha * expm1 of a float32 subnormal rounds twice: such results only stay that small
        allowed = np.abs(true) < np.finfo(np.float32).tiny
        assert (np.abs(got[allowed]) <= np.finfo(np.float32).tiny).all()
    assert not (wrong & ~allowed).any(), (int(wrong.sum()), x[wrong][:5], got[wrong][:5], want[wrong][:5])
    # the numpy reference check_kernels compares with gives the same numbers (in float32 it gave
    # 0.498046875 for sigmoid(-2**-8) = 0.49902343874..., whose float32 value is the midpoint
    # 0.4990234375 of two bf16 numbers, which rounds to even: 0.5)
    kernel = Bf16Evaluation(node, "A8W8", attrs={"float_inputs": [True], "on_bf16_grid": [False], "opset": 17,
                                                 "least": least})
    with np.errstate(over="ignore", invalid="ignore"):
        reference = kernel.reference([x])[0]
    np.testing.assert_array_equal(reference[~allowed], want[~allowed])
