"""FP16 models through the BF16 conversion and the NPU emulator (regressions found while writing notebook 7)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort

from ryzen_nb import npu, zoo
from ryzen_nb.graph.convert import _retype
from ryzen_nb.quantization.bf16 import convert_bf16


def test_npu_session_runs_an_fp16_model() -> None:
    # compile() puts an FP16 model on Strix's NPU in BF16, like an FP32 one, but NPUSession failed
    # to load it: the float kernels' bf16 rounding cast float16 tensors to float32, and onnxruntime
    # rejected the graph ("Type (tensor(float16)) of output arg (logits) ... does not match").
    model = zoo.load_model("resnet_digits")
    fp32 = onnx.load(str(model.path))
    fp16 = _retype(fp32, onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, keep_io=False)
    assert npu.compile(fp16, "STX").precisions == {"BF16": 22}
    digits = zoo.load_dataset("digits", split="evaluation").samples[:8]
    session16, session32 = npu.NPUSession(fp16, "STX"), npu.NPUSession(fp32, "STX")
    assert session16.get_inputs()[0].type == "tensor(float16)"  # the model's own inputs and outputs stay FP16
    for digit in digits:
        x = model.preprocess(digit)["image"]
        y16 = session16.run(None, {"image": x.astype(np.float16)})[0]
        y32 = session32.run(None, {"image": x})[0]
        assert y16.dtype == np.float16
        # both compute in bf16; the FP16 weights were rounded to fp16 first, and the logits to fp16 at the end
        np.testing.assert_allclose(y16.astype(np.float32), y32, rtol=0.02, atol=0.05)
        assert y16.argmax() == y32.argmax()


def test_fp16_to_bf16_rounds_the_outputs_to_bf16() -> None:
    # convert_bf16 quantized an FP16 model with its FP16 boundary in place: the output's quantizer
    # then fed nothing (the Cast to FP16 read the tensor before it), so the outputs were never
    # rounded to bf16 and a dangling quantizer was left in the graph — the CPU simulation was
    # closer to FP32 than the NPU computes (45.8 vs 45.4 dB SQNR on resnet_digits).
    model = zoo.load_model("resnet_digits")
    fp16 = _retype(onnx.load(str(model.path)), onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, keep_io=False)
    x = model.preprocess(zoo.load_dataset("digits", split="evaluation").samples[0])["image"].astype(np.float16)
    for fmt in ("with_cast", "simulate_bf16", "customqdq"):
        r = convert_bf16(fp16, None, fmt)
        g = r.model.graph
        assert g.input[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
        assert g.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT16
        read = {name for node in g.node for name in node.input} | {o.name for o in g.output}
        assert all(any(o in read for o in node.output) for node in g.node), f"{fmt}: a node nothing reads"
        y = npu.NPUSession(r.model, "STX").run(None, {"image": x})[0]
        out = ort.InferenceSession(r.model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"image": x})[0]
        assert out.dtype == np.float16
        wide = out.astype(np.float32)
        np.testing.assert_array_equal(wide, wide.astype(ml_dtypes.bfloat16).astype(np.float32))  # bf16 values
        np.testing.assert_allclose(wide, y.astype(np.float32), rtol=0.02, atol=0.02)  # as the NPU computes
