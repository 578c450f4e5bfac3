"""NPU targets, the supported-operator table, partition decisions and the compile report."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ryzen_nb
from ryzen_nb import npu
from ryzen_nb.errors import UnknownNameError
from ryzen_nb.graph.builder import make_model
from ryzen_nb.testing import resnet_cnn


# -- targets ---------------------------------------------------------------------------------------------
def test_targets_reproduce_the_published_peaks() -> None:
    # docs/npu-hardware.md#clocks-and-peak-rates: Strix 8 x 4096 x 1.584 GHz = 51.9 TOPS; Phoenix's 4 usable columns at 1.024 GHz = 8.4
    assert npu.get_target("STX").peak_tops("int8") == pytest.approx(51.9, abs=0.1)
    assert npu.get_target("PHX").peak_tops("int8") == pytest.approx(8.4, abs=0.1)
    assert npu.get_target("HPT").peak_tops("int8") == pytest.approx(13.1, abs=0.1)  # 4 of 5 columns at 1.6 GHz
    assert npu.get_target("STX").peak_tops("bf16") == pytest.approx(npu.get_target("STX").peak_tops("int8") / 2)
    assert set(npu.target_names()) == {"PHX", "HPT", "STX", "KRK", "STXH"}
    assert "BF16" not in npu.get_target("PHX").precisions and "BF16" in npu.get_target("KRK").precisions
    assert npu.get_target("strix") is npu.TARGETS["STX"] and npu.get_target("Strix Halo").name == "STXH"
    faster = npu.get_target("STX").with_options(clock_ghz=1.8)
    assert faster.peak_tops() > npu.get_target("STX").peak_tops() and faster.name == "STX"


def test_unknown_target_and_fields_are_named() -> None:
    with pytest.raises(UnknownNameError, match="STX"):
        npu.get_target("STRX")
    with pytest.raises(UnknownNameError, match="clock_ghz"):
        npu.get_target("STX").with_options(clock_ghz_max=2.0)
    with pytest.raises(UnknownNameError, match="minimum_conv"):
        npu.compile(resnet_cnn(0, blocks=(1,), width=4, image_size=8), "STX", minimum_convs=1)


def test_supported_operator_table_is_the_published_one() -> None:
    # docs/npu-operators.md#the-supported-operator-table: 105 rows, Y counts BF16 78, A16W8 53, A8W8 53, XINT8 83, with its quirks kept literally
    counts = {p: len(npu.supported_ops(p)) for p in ("BF16", "A16W8", "A8W8", "XINT8")}
    assert counts == {"BF16": 78, "A16W8": 53, "A8W8": 53, "XINT8": 83}
    assert not npu.is_supported("Relu", "BF16") and npu.is_supported("Relu", "XINT8")
    assert npu.is_supported("LayerNormalization", "XINT8") and not npu.is_supported("LayerNormalization", "A8W8")
    assert npu.is_supported("HardSigmoid", "A8W8") and not npu.is_supported("HardSigmoid", "XINT8")
    assert npu.is_supported("Conv", "BFP16")  # BFP16 runs through the BF16 column (VAIML)


# -- partition decisions on hand-built graphs ----------------------------------------------------------------
def _model(nodes, inits, x_shape=(1, 4, 8, 8), y_shape=None) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    return make_model(graph)


def _w(name, shape, seed=0):
    return numpy_helper.from_array(np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.3, name)


def _conv_chain(tail_op: str = "Sigmoid", convs: int = 2) -> onnx.ModelProto:
    nodes, inits, x = [], [], "x"
    for i in range(convs):
        inits.append(_w(f"w{i}", (4, 4, 3, 3), i))
        nodes.append(helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]))
        nodes.append(helper.make_node("Relu", [f"c{i}"], [f"r{i}"], name=f"relu{i}"))
        x = f"r{i}"
    nodes.append(helper.make_node(tail_op, [x], ["y"], name="tail"))
    return _model(nodes, inits)


def _quantized(model: onnx.ModelProto, preset: str) -> onnx.ModelProto:
    data = np.random.default_rng(1).standard_normal((8, 1, *[d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim][1:])).astype(np.float32)
    return ryzen_nb.quantize(model, None, preset, list(data), progress=False).model


def _by_name(program: npu.NPUProgram) -> dict[str, npu.NodeAssignment]:
    return {n.name: n for n in program.nodes}


def test_xint8_model_on_every_target_and_unsupported_ops_fall_back() -> None:
    q = _quantized(_conv_chain("Sigmoid"), "XINT8")
    for target in ("PHX", "HPT", "STX"):
        program = npu.compile(q, target)
        nodes = _by_name(program)
        assert nodes["conv0"].device == nodes["conv1"].device == "NPU"
        assert nodes["conv0"].precision == "XINT8"
        assert nodes["relu0"].device == "NPU"  # fused into the convolution
        # Sigmoid has no XINT8 kernel in the table (Quark's XINT8 flow turns it into HardSigmoid)
        assert nodes["tail"].device == "CPU" and "no XINT8 NPU kernel" in nodes["tail"].reason
    assert npu.compile(q, "PHX").compilers["XINT8"] == "X1" and npu.compile(q, "STX").compilers["XINT8"] == "X2"


def test_float_scale_and_float_models_need_xdna2() -> None:
    a8w8 = _quantized(_conv_chain("Relu"), "A8W8")
    stx, phx = npu.compile(a8w8, "STX"), npu.compile(a8w8, "PHX")
    assert _by_name(stx)["conv0"].precision == "A8W8" and _by_name(stx)["conv0"].device == "NPU"
    assert "PHX does not run A8W8" in _by_name(phx)["conv0"].reason
    fp32 = _conv_chain("Relu")
    bf16 = _by_name(npu.compile(fp32, "STX"))
    assert bf16["conv0"].device == "NPU" and bf16["conv0"].precision == "BF16"  # VAIML compiles FP32 as BF16
    assert "quantize to XINT8 first" in _by_name(npu.compile(fp32, "PHX"))["conv0"].reason
    bfp = _by_name(npu.compile(_quantized(_conv_chain("Relu"), "BFP16"), "STX"))
    assert bfp["conv0"].precision == "BFP16" and bfp["conv0"].device == "NPU"
    mx4 = _by_name(npu.compile(_quantized(_conv_chain("Relu"), "MX4"), "STX"))
    assert mx4["conv0"].precision == "BF16"  # MX is QDQ-simulated; the NPU computes bf16 (A17)


def test_x1_gates_minimum_convolutions_and_subgraph_cap() -> None:
    one_conv = _quantized(_conv_chain("Relu", convs=1), "XINT8")
    program = npu.compile(one_conv, "PHX")
    assert not program.npu_nodes and "minimum_num_of_conv" in program.cpu_reasons().reason.iloc[0]
    assert npu.compile(one_conv, "PHX", minimum_conv=1).npu_nodes
    assert npu.compile(one_conv, "STX").npu_nodes  # X2 has no such gate
    # a Sin (no quantizer, no NPU kernel) after every convolution splits the graph: 3 subgraphs > cap 2 -> all CPU
    nodes, inits, x = [], [], "x"
    for i in range(3):
        inits.append(_w(f"w{i}", (4, 4, 3, 3), i))
        nodes += [helper.make_node("Conv", [x, f"w{i}"], [f"c{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                  helper.make_node("Sin", [f"c{i}"], [f"s{i}"], name=f"sin{i}")]
        x = f"s{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    split = _quantized(_model(nodes, inits), "XINT8")
    assert len(npu.compile(split, "PHX", minimum_conv=1).subgraphs) == 3
    capped = npu.compile(split, "PHX", minimum_conv=1, max_subgraphs=2)
    assert not capped.npu_nodes and "dpu_subgraph_num" in capped.cpu_reasons().reason.iloc[0]


def test_dynamic_shapes_and_attribute_checks_keep_nodes_on_the_cpu() -> None:
    w = _w("w", (4, 4, 3, 3))
    dynamic = _model([helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
                      helper.make_node("Relu", ["c"], ["y"], name="relu")], [w], x_shape=("N", 4, 8, 8))
    conv = _by_name(npu.compile(dynamic, "STX"))["conv"]
    assert conv.device == "CPU" and "dynamic or unknown shape" in conv.reason
    big = _w("big", (4, 4, 17, 17))
    wide = _quantized(_model([helper.make_node("Conv", ["x", "big"], ["c"], name="conv", pads=[8] * 4),
                              helper.make_node("Conv", ["c", "w"], ["y"], name="conv2", pads=[1] * 4)], [big, w]), "XINT8")
    nodes = _by_name(npu.compile(wide, "PHX", minimum_conv=1))
    assert nodes["conv"].device == "CPU" and "exceeds 16" in nodes["conv"].reason
    assert nodes["conv2"].device == "NPU"
    assert _by_name(npu.compile(wide, "PHX", minimum_conv=1, dpu_limits=False))["conv"].device == "NPU"


def test_excluded_operators_and_float_weights_stay_on_the_cpu() -> None:
    data = list(np.random.default_rng(1).standard_normal((8, 1, 4, 8, 8)).astype(np.float32))
    qc = ryzen_nb.get_default_config("XINT8")
    qc.nodes_to_exclude.append("conv1")
    q = ryzen_nb.quantize(_conv_chain("Relu", convs=3), None, qc, data, progress=False).model
    program = npu.compile(q, "STX")
    conv1 = _by_name(program)["conv1"]
    assert conv1.device == "CPU" and "only operators between quantizers" in conv1.reason
    assert len(program.subgraphs) == 2
    # a convolution reading quantized activations but a float weight cannot run in an INT8 model
    q = ryzen_nb.quantize(_conv_chain("Relu", convs=3), None, "XINT8", data, progress=False).model
    q.graph.initializer.append(_w("w_float", (4, 4, 3, 3)))
    next(n for n in q.graph.node if n.name == "conv1").input[1] = "w_float"
    conv1 = _by_name(npu.compile(q, "STX"))["conv1"]
    assert conv1.device == "CPU" and "'w_float' is not quantized" in conv1.reason


# -- the compile report ---------------------------------------------------------------------------------------
def test_summary_log_and_report_schema(tmp_path) -> None:
    q = _quantized(resnet_cnn(0, blocks=(1, 1), width=8, image_size=16), "XINT8")
    program = npu.compile(q, "STX")
    cpu, npu_count = len(program.cpu_nodes), len(program.npu_nodes)
    assert program.summary() == f"CPU {cpu}, NPU {npu_count} operators, {len(program.subgraphs)} NPU subgraphs"
    assert len(program.subgraphs) == 1 and npu_count > 30
    log = program.ep_log().splitlines()
    assert log[0].startswith("[Vitis AI EP] No. of Operators :") and f"NPU {npu_count:>5}" in log[0]
    assert log[1].startswith("[Vitis AI EP] No. of Subgraphs :")
    report = program.report()
    assert {"deviceStat", "nodeStat", "shapeInfo", "subgraphStat"} <= set(report)  # VOE's StatProto (docs/npu-compilers.md#compile-report)
    devices = {d["name"]: d for d in report["deviceStat"]}
    assert devices["all"]["nodeNum"] == cpu + npu_count
    assert devices["CPU"]["nodeNum"] == cpu and devices["NPU"]["nodeNum"] == npu_count
    assert all(set(n) == {"output", "input", "opDomain", "opType", "comment", "device"} for n in report["nodeStat"])
    assert all({"name", "shape", "isScalar", "isUnknown"} <= set(s) for s in report["shapeInfo"])
    assert all(t.startswith("::") for d in report["deviceStat"] for t in d["supportedOpType"])  # "domain::OpType"
    assert {d["device"]: d["count"] for d in report["subgraphStat"]}["NPU"] == 1
    path = program.write_report(tmp_path / "out" / "vitisai_ep_report.json")
    assert json.loads(path.read_text()) == report
    table = program.table()
    assert list(table.columns[:4]) == ["node", "op", "device", "precision"] and len(table) == len(q.graph.node)
    assert "NPU" in program._repr_html_()
