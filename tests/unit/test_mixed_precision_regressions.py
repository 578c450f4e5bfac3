"""Regressions found while writing notebook 6 (mixed precision).

Layer-wise mixed precision to a block format (BFP16, MX) on an integer model with DualQuantNodes
puts a block quantizer straight after an integer DequantizeLinear. onnxruntime 1.32's Q/DQ
propagation then walks into the block quantizer's inlined body and aborts the whole process
(a C++ assertion, not an exception) when the model is loaded. The check runs in a subprocess so
a regression fails this test instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort

import ryzen_nb
from ryzen_nb import get_default_config, zoo

LOAD_AND_RUN = """
import sys, numpy as np, onnxruntime as ort
session = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
print(session.run(None, {"image": np.ones((1, 1, 8, 8), np.float32)})[0].shape)
"""


def test_block_dual_quantizers_after_integer_ones_load_in_onnxruntime(tmp_path: Path) -> None:
    model = zoo.load_model("resnet_digits")
    calibration = [model.preprocess(s) for s in zoo.load_dataset("digits", split="calibration").samples[:16]]
    qc = get_default_config("A8W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"TargetOpType": ["Conv"], "TargetQuantType": "QBFP", "DualQuantNodes": True}
    summary = ryzen_nb.quantize(model.path, tmp_path / "mixed.onnx", qc, calibration, progress=False)
    duals = {k: v for k, v in summary.formats_by_tensor.items() if k.endswith("(dual)")}
    assert "BFP16" in duals.values() and "int8" in duals.values()  # boundaries both ways
    run = subprocess.run([sys.executable, "-c", LOAD_AND_RUN, str(summary.output_path)], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "(1, 10)" in run.stdout

    # the shield (a one-input Max) changes nothing: the same outputs as the graph run unoptimized
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(str(summary.output_path), so, providers=["CPUExecutionProvider"])
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC  # where the propagation runs
    basic = ort.InferenceSession(str(summary.output_path), so, providers=["CPUExecutionProvider"])
    for feed in calibration[:4]:
        np.testing.assert_array_equal(plain.run(None, feed)[0], basic.run(None, feed)[0])
    shielded = [f.name for f in onnx.load(summary.output_path).functions if f.name.endswith("_after_dq")]
    assert shielded and all("QuantizeDequantize" in name for name in shielded)  # still read as quantizers


def test_layers_switched_to_a_block_format_take_their_biases_along() -> None:
    """A Conv switched to BFP16 on an A8W8 model kept an int8 bias (no int32 bias without an integer
    input scale): a precision the NPU has no kernel for, and a coarser bias than either format."""
    from ryzen_nb import npu

    model = zoo.load_model("resnet_digits")
    calibration = [model.preprocess(s) for s in zoo.load_dataset("digits", split="calibration").samples[:16]]
    qc = get_default_config("A8W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"TargetOpType": ["Conv"], "TargetQuantType": "QBFP"}
    summary = ryzen_nb.quantize(model.path, None, qc, calibration, progress=False)
    formats = summary.formats_by_tensor
    conv_biases = [n for n in formats if n.endswith(".bias") and not n.startswith("fc")]
    assert conv_biases and all(formats[n] == "BFP16" for n in conv_biases)
    assert formats["fc.bias"] == "int32"  # the Gemm was not switched: int32 with scale input x weight
    program = npu.compile(summary.model, "STX")
    assert {n.precision for n in program.nodes if n.op_type == "Conv"} == {"BFP16"}
    assert len(program.cpu_reasons()) == 0


def test_a_switch_that_makes_the_outputs_infinite_is_never_taken() -> None:
    """int8 activations round the small inputs of a Log to 0 (-Inf out), int16 ones do not. The search
    compared the step's L2 (NaN) with the target, which NaN passes, and switched the unit: the model came
    back with -Inf outputs under "L2 nan". A NaN or Inf step now breaks any target."""
    from onnx import TensorProto, helper, numpy_helper

    from ryzen_nb.graph.builder import make_model

    nodes = [helper.make_node("MatMul", ["x", "W"], ["m"], name="mm"), helper.make_node("Relu", ["m"], ["r"], name="relu"),
             helper.make_node("Log", ["r"], ["y"], name="log")]
    graph = helper.make_graph(nodes, "log_of_zero", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])],
                              [numpy_helper.from_array(np.eye(8, dtype=np.float32), "W")])
    rng = np.random.default_rng(0)
    data = [np.concatenate([[100.0], rng.uniform(0.01, 0.1, 7)]).astype(np.float32)[None] for _ in range(8)]
    qc = get_default_config("A16W8")
    qc.include_auto_mp = True
    qc.extra_options["AutoMixprecision"] = {"ActTargetQuantType": "QInt8", "L2Target": 1e9}
    summary = ryzen_nb.quantize(make_model(graph, opset=17), None, qc, data, progress=False)
    assert summary.formats_by_tensor["r"] == "int16", summary.formats_by_tensor
    assert np.isfinite(summary.reports["mixed_precision"].final["l2"])
    assert not [n for n in summary.notes if "NaN or Inf" in n]
