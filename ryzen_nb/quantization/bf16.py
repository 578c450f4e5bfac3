"""``ryzen-nb convert-bf16``: FP32 or FP16 models to BF16, in the four formats of Quark's
``convert_fp32_to_bf16`` / ``convert_fp16_to_bf16`` tools.

=============  ==================================================================  =====================
format         what the model holds                                                 plain onnxruntime CPU
=============  ==================================================================  =====================
with_cast      Cast FP32->BF16->FP32 pairs on activations, weights stored as bf16     runs
               + Cast (Quark ``BF16QDQToCast``; what the VAIML compiler consumes)
bf16           every tensor inside in bfloat16; inputs/outputs stay FP32 (FP16)    needs bf16 kernels:
                                                                                    usually not
simulate_bf16  bf16-rounded weights stored as float32, activations through one     runs
               quantizer node each (Quark ``EnableVaimlBF16``)
customqdq      one ``ryzen_nb:bfloat16QuantizeDequantize`` node per tensor, weights  runs
               kept FP32 behind one — the standard-op twin of Quark's custom
               ``ExtendedQuantizeLinear/DequantizeLinear`` (which needs Quark's
               custom-op library)
=============  ==================================================================  =====================

FP16 models are converted to FP32 inside first and keep FP16 inputs and outputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from ryzen_nb.errors import UnknownNameError
from ryzen_nb.graph.convert import float16_io, float16_to_float32, float32_to_bfloat16, has_float16, with_float16_io
from ryzen_nb.graph.io import ModelLike, check_output, load_model, model_inputs, save_model
from ryzen_nb.graph.prepare import input_specs, ort_session, prepare
from ryzen_nb.graph.shapes import with_free_batch
from ryzen_nb.quantization.config import get_default_config
from ryzen_nb.quantization.run import QuantizationRun, QuantizationSummary

__all__ = ["BF16_FORMATS", "BF16Conversion", "convert_bf16", "check_runs_on_cpu"]

BF16_FORMATS = ("with_cast", "bf16", "simulate_bf16", "customqdq")


@dataclass
class BF16Conversion:
    format: str
    output_path: Path | None
    model: onnx.ModelProto
    from_float16: bool
    runs_on_cpu: bool
    cpu_message: str  #: why plain onnxruntime cannot run it, if it cannot
    summary: QuantizationSummary | None = None

    def __repr__(self) -> str:
        where = "runs on plain onnxruntime (CPU)" if self.runs_on_cpu else f"does NOT run on onnxruntime CPU: {self.cpu_message}"
        src = "FP16" if self.from_float16 else "FP32"
        return f"<BF16Conversion {src} -> {self.format}: {where}>"


def check_runs_on_cpu(model: onnx.ModelProto) -> tuple[bool, str]:
    """Load the model in onnxruntime's CPU provider and run it once on zeros."""
    try:
        session = ort_session(model)
        feeds = {}
        for spec in input_specs(model):
            shape = [d if isinstance(d, int) and d > 0 else 1 for d in spec.shape]
            feeds[spec.name] = np.zeros(shape, dtype=spec.dtype)
        session.run(None, feeds)
        return True, ""
    except Exception as exc:  # onnxruntime reports missing kernels as generic failures
        import re

        text = str(exc).split("\n")[0]
        op = re.search(r"of operator \((\w+)\)", text) or re.search(r"implementation for (\w+)\(", text)
        if op and "bfloat16" in text:
            return False, f"its {op.group(1)} has no bfloat16 kernel in onnxruntime's CPU provider"
        return False, text[:400]


def convert_bf16(model: ModelLike, output_path: str | Path | None, format: str = "with_cast", *,
                 input_shapes: dict[str, Any] | None = None) -> BF16Conversion:
    """Convert an FP32/FP16 model to BF16 in one of :data:`BF16_FORMATS` (default ``with_cast``).
    ``input_shapes`` fixes dynamic input dimensions (``{"input": [1, 3, 224, 224]}``); a dynamic
    batch stays dynamic in the output."""
    if format not in BF16_FORMATS:
        raise UnknownNameError("BF16 format", format, BF16_FORMATS,
                               hint="with_cast is the default and what the Ryzen AI compiler consumes.")
    inputs = model_inputs(model, "input model")
    if output_path is not None:  # before any work: never over the model or its external data
        check_output(output_path, inputs, "output_path")
    m = load_model(model)
    from_fp16 = has_float16(m)
    if from_fp16:
        io16 = float16_io(m)
        # the quantizer formats quantize a float32 model with float32 inputs and outputs and get the FP16
        # boundary back afterwards: quantized inside, the outputs' Casts to FP16 would read the tensors
        # before their bf16 rounding (and leave the output quantizers dangling)
        m = float16_to_float32(m, keep_io_types=format == "bf16")
    summary = None
    if format == "bf16":
        prepared = prepare(m, input_shapes=input_shapes, optimize=True)
        restored = with_free_batch(prepared.model, prepared.dynamic_batch, list(m.graph.output))
        converted = float32_to_bfloat16(restored)
        try:
            converted = onnx.shape_inference.infer_shapes(converted, strict_mode=False)
        except Exception:  # informative only
            pass
        onnx.checker.check_model(converted)
    else:
        qc = get_default_config("BF16")
        if format == "with_cast":
            qc.extra_options["BF16QDQToCast"] = True
        elif format == "simulate_bf16":
            qc.extra_options["EnableVaimlBF16"] = True
        run = QuantizationRun.prepare(m, qc, input_shapes=input_shapes, progress=False)  # BF16 runs no algorithm
        run.start()
        summary = run.finish(None)
        converted = summary.model
        if from_fp16:
            converted = with_float16_io(converted, *io16)
            converted = onnx.shape_inference.infer_shapes(converted, strict_mode=False)
            summary.model = converted
    runs, message = check_runs_on_cpu(converted)
    out = save_model(converted, output_path, protect=inputs, what="output_path") if output_path is not None else None
    if summary is not None:
        summary.output_path = out
    return BF16Conversion(format, out, converted, from_fp16, runs, message, summary)
